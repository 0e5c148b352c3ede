#include "core/i18n.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

namespace sika::i18n {

namespace {
struct Entry {
  std::string_view code, fr, en;
};
// Keep sorted by code: lookups are binary searches.
constexpr Entry kMessages[] = {
    {"access_denied", "Accès refusé.", "Access denied."},
    {"account_not_found", "Aucun titulaire de compte pour ce portefeuille.", "No account holder for this wallet."},
    {"already_exists", "Cet objet existe déjà.", "This object already exists."},
    {"bad_request", "Requête invalide.", "Bad request."},
    {"blocked_address", "Adresse de destination refusée (réseau privé ou réservé).",
     "Destination address refused (private or reserved network)."},
    {"checkout_failed", "Le paiement n'a pas abouti.", "The payment did not go through."},
    {"checkout_failed_cancelled", "Le paiement n'a pas abouti : il a été annulé.",
     "The payment did not go through: it was cancelled."},
    {"checkout_failed_declined", "Le paiement n'a pas abouti : la demande a été refusée sur le téléphone.",
     "The payment did not go through: the request was declined on the phone."},
    {"checkout_failed_insufficient_funds",
     "Le paiement n'a pas abouti : le solde du compte mobile money est insuffisant.",
     "The payment did not go through: the mobile-money balance is insufficient."},
    {"checkout_failed_invalid_account", "Le paiement n'a pas abouti : ce numéro n'a pas de compte chez cet opérateur.",
     "The payment did not go through: this number has no account with this operator."},
    {"checkout_failed_invalid_otp", "Le paiement n'a pas abouti : trop de codes incorrects.",
     "The payment did not go through: too many incorrect codes."},
    {"checkout_failed_refused", "Le paiement n'a pas abouti : l'opérateur l'a refusé.",
     "The payment did not go through: the operator refused it."},
    {"checkout_failed_timeout", "Le paiement n'a pas abouti : la demande n'a pas été validée à temps.",
     "The payment did not go through: the request was not approved in time."},
    {"checkout_try_again", "Vous pouvez réessayer ou choisir un autre moyen de paiement.",
     "You may try again or choose another payment method."},
    {"conflict", "Conflit avec l'état actuel de la ressource.", "Conflict with the current state of the resource."},
    {"created", "Créé avec succès.", "Created successfully."},
    {"empty_data", "Données absentes ou invalides.", "Missing or invalid data."},
    {"header_too_large", "En-têtes de requête trop volumineux.", "Request headers too large."},
    {"host_busy", "Trop de requêtes en cours vers cet hôte, réessayez plus tard.",
     "Too many requests in progress to this host, try again later."},
    {"insufficient_funds", "Solde insuffisant.", "Insufficient balance."},
    {"insufficient_scope", "Le jeton n'a pas la portée requise.", "The token lacks the required scope."},
    {"internal_error", "Erreur interne du serveur.", "Internal server error."},
    {"invalid_client", "Authentification du client refusée.", "Client authentication failed."},
    {"invalid_grant", "Autorisation invalide ou expirée.", "Invalid or expired grant."},
    {"invalid_otp", "Code à usage unique incorrect.", "Incorrect one-time code."},
    {"invalid_request", "Requête OAuth invalide.", "Invalid OAuth request."},
    {"invalid_scope", "Portée demandée invalide.", "Invalid scope requested."},
    {"invalid_target", "Ressource cible invalide.", "Invalid target resource."},
    {"invalid_token", "Jeton invalide, expiré ou révoqué.", "Invalid, expired or revoked token."},
    {"limit_exceeded", "Le paiement dépasse les limites autorisées par l'utilisateur.",
     "The payment exceeds the limits the user consented to."},
    {"link success", "Portefeuille lié avec succès.", "Wallet linked successfully."},
    {"method_not_allowed", "Méthode non autorisée pour cette ressource.", "Method not allowed for this resource."},
    {"no_pricing_rule", "Aucune tarification n'est configurée pour cette opération.",
     "No pricing is configured for this operation."},
    {"not_found", "Ressource introuvable.", "Resource not found."},
    {"ok", "Opération réussie.", "Operation successful."},
    {"order_paid", "Cette commande est déjà payée.", "This order is already paid."},
    {"payload_too_large", "Corps de requête trop volumineux.", "Request body too large."},
    {"provider_unavailable", "Opérateur momentanément indisponible.", "Provider temporarily unavailable."},
    {"rate_limited", "Trop de requêtes, réessayez plus tard.", "Too many requests, try again later."},
    {"request_timeout", "Délai de requête dépassé.", "Request timed out."},
    {"revoked", "Jeton révoqué.", "Token revoked."},
    {"service_unavailable", "Service momentanément indisponible.", "Service temporarily unavailable."},
    {"session_expired", "Cette session de paiement a expiré.", "This checkout session has expired."},
    {"submitted", "Demande soumise avec succès.", "Request submitted successfully."},
    {"transaction_status", "Statut actuel de la transaction.", "Current status of the transaction."},
    {"unauthorized", "Authentification requise.", "Authentication required."},
    {"unauthorized_client", "Client non autorisé pour cette opération.", "Client not authorized for this operation."},
    {"unsupported_grant_type", "Type d'autorisation non pris en charge.", "Unsupported grant type."},
    {"unsupported_media_type", "Type de contenu non pris en charge.", "Unsupported content type."},
    {"upstream_error", "Le serveur distant a échoué ou est injoignable.",
     "The remote server failed or is unreachable."},
    {"upstream_timeout", "Le serveur distant n'a pas répondu à temps.", "The remote server did not answer in time."},
};

const Entry* find(std::string_view code) {
  auto it = std::lower_bound(std::begin(kMessages), std::end(kMessages), code,
                             [](const Entry& e, std::string_view c) { return e.code < c; });
  if (it == std::end(kMessages) || it->code != code) return nullptr;
  return it;
}
}  // namespace

std::string_view name(Locale l) { return l == Locale::fr ? "fr" : "en"; }

Locale negotiate(std::string_view header, Locale fallback) {
  // Accept-Language: fr-CM,fr;q=0.9,en;q=0.8
  double best_q = -1;
  Locale best = fallback;
  std::size_t pos = 0;
  while (pos <= header.size()) {
    std::size_t end = header.find(',', pos);
    if (end == std::string_view::npos) end = header.size();
    std::string_view item = header.substr(pos, end - pos);
    pos = end + 1;
    std::string_view tag = item.substr(0, item.find(';'));
    while (!tag.empty() && std::isspace(static_cast<unsigned char>(tag.front()))) tag.remove_prefix(1);
    while (!tag.empty() && std::isspace(static_cast<unsigned char>(tag.back()))) tag.remove_suffix(1);
    double q = 1.0;
    if (auto qp = item.find("q="); qp != std::string_view::npos)
      q = std::atof(std::string(item.substr(qp + 2)).c_str());
    std::string lang;
    for (char c : tag.substr(0, tag.find('-')))
      lang.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    if ((lang == "fr" || lang == "en") && q > best_q) {
      best_q = q;
      best = lang == "fr" ? Locale::fr : Locale::en;
    }
    if (end == header.size()) break;
  }
  return best;
}

std::string_view text(std::string_view code, Locale l) {
  const Entry* e = find(code);
  if (!e) return code;
  return l == Locale::fr ? e->fr : e->en;
}

bool known(std::string_view code) { return find(code) != nullptr; }

std::vector<std::string_view> all_codes() {
  std::vector<std::string_view> out;
  for (const auto& e : kMessages) out.push_back(e.code);
  return out;
}

}  // namespace sika::i18n
