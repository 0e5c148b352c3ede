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
    // Field problems (core/reason.hpp): "reason.<name>", {name} a parameter of the problem.
    {"reason.absolute_http_url", "doit être une URL http ou https absolue", "must be an absolute http or https URL"},
    {"reason.amount_or_rate", "doit avoir exactement un de amount (unités mineures) et rate (un pourcentage)",
     "must have exactly one of amount (minor units) and rate (a percentage)"},
    {"reason.amount_with_rates", "est obligatoire avec des taux (le total à distribuer)",
     "is required with rates (the total to distribute)"},
    {"reason.api_key_inactive", "n'est pas une clé d'API de marchand active", "is not an active merchant API key"},
    {"reason.api_key_required", "est obligatoire : la clé d'API du marchand", "is required: the merchant API key"},
    {"reason.area_code", "doit être un code de pays (ISO 3166 alpha-2 ou alpha-3, ex. CM ou CMR)",
     "must be a country code (ISO 3166 alpha-2 or alpha-3, e.g. CM or CMR)"},
    {"reason.area_currency",
     "{area} encaisse en {currency}, pas en {asked} (envoyez line=up pour permettre la conversion de devise)",
     "{area} collects in {currency}, not {asked} (send line=up to allow currency conversion)"},
    {"reason.area_not_collected", "n'est pas un pays où ce marchand encaisse",
     "is not a country this merchant collects in"},
    {"reason.area_unknown", "n'est pas un pays du catalogue", "is not a country of the catalog"},
    {"reason.at_least_amount", "doit être au moins {min}", "must be at least {min}"},
    {"reason.at_least_for_service", "doit être au moins {min} pour {service}", "must be at least {min} for {service}"},
    {"reason.at_most", "doit être au plus {max}", "must be at most {max}"},
    {"reason.at_most_chars", "doit faire au plus {max} caractères", "must be at most {max} characters"},
    {"reason.at_most_for_service", "doit être au plus {max} pour {service}", "must be at most {max} for {service}"},
    {"reason.at_most_items", "doit avoir au plus {max} éléments", "must have at most {max} items"},
    {"reason.at_most_json_bytes", "doit faire au plus {max} octets de JSON", "must be at most {max} bytes of JSON"},
    {"reason.at_most_printable", "doit faire au plus {max} caractères imprimables",
     "must be at most {max} printable characters"},
    {"reason.body_empty", "le corps de la requête est vide", "request body is empty"},
    {"reason.body_not_object", "le corps de la requête doit être un objet JSON", "request body must be a JSON object"},
    {"reason.channel", "doit valoir PROVIDER, WALLET ou AUTO", "must be PROVIDER, WALLET or AUTO"},
    {"reason.channel_own_wallet", "doit valoir PROVIDER pour une recharge ou un retrait de portefeuille",
     "must be PROVIDER for a wallet top-up or withdrawal"},
    {"reason.choose_method", "est obligatoire : choisissez un moyen de paiement",
     "is required: choose a payment method"},
    {"reason.choose_service", "est obligatoire : choisissez le service de paiement (ex. MTN_MOMO_CMR)",
     "is required: choose the payment service (e.g. MTN_MOMO_CMR)"},
    {"reason.control_characters", "ne doit pas contenir de caractères de contrôle",
     "must not contain control characters"},
    {"reason.country_not_granted", "le pays {country} de ce service n'est pas accordé à cet identifiant",
     "the country {country} of this service is not granted to this credential"},
    {"reason.currency_code", "doit être un code ISO 4217 de 3 lettres", "must be a 3-letter ISO 4217 code"},
    {"reason.currency_letters", "doit être un code de devise de 3 lettres", "must be a 3-letter currency code"},
    {"reason.currency_not_allowed", "n'est pas la devise d'un pays où ce marchand peut encaisser",
     "is not the currency of a country this merchant may collect in"},
    {"reason.currency_not_collected", "n'est pas la devise d'un pays où ce marchand encaisse",
     "is not the currency of a country this merchant collects in"},
    {"reason.currency_upper", "doit être un code ISO 4217 de 3 lettres majuscules (XAF, XOF, USD)",
     "must be a 3-letter ISO 4217 code in upper case (XAF, XOF, USD)"},
    {"reason.date_time", "doit être une date et heure ISO 8601, ex. 2026-12-31T23:59:59Z",
     "must be an ISO 8601 date-time, e.g. 2026-12-31T23:59:59Z"},
    {"reason.decimal_number", "doit être un nombre décimal", "must be a decimal number"},
    {"reason.decimals_in", "doit être un montant positif avec au plus {max} décimales en {currency}",
     "must be a positive amount with at most {max} decimals in {currency}"},
    {"reason.digits_after", "doit avoir {digits} chiffres après {dialling_code}",
     "must have {digits} digits after {dialling_code}"},
    {"reason.duplicate_key", "est répété (clé en double)", "is repeated (duplicate key)"},
    {"reason.email", "doit être une adresse e-mail", "must be an e-mail address"},
    {"reason.exponent_range", "exposant hors limites", "exponent out of range"},
    {"reason.fee_bearer", "doit valoir CUSTOMER ou MERCHANT", "must be CUSTOMER or MERCHANT"},
    {"reason.fee_exceeds_amount", "doit dépasser les frais à la charge du marchand ({fee})",
     "must be more than the fee the merchant bears ({fee})"},
    {"reason.fixed_amount", "doit valoir {amount}, le montant fixe du lien",
     "must be {amount}, the link's fixed amount"},
    {"reason.foreign_domain", "doit être sur un des domaines déclarés du marchand",
     "must be on one of this merchant's registered domains"},
    {"reason.greater_than_zero", "doit être supérieur à 0", "must be greater than 0"},
    {"reason.has_host", "doit avoir un hôte", "must have a host"},
    {"reason.hmac_hex", "doit faire 64 caractères hexadécimaux (HMAC-SHA256)",
     "must be 64 hexadecimal characters (HMAC-SHA256)"},
    {"reason.http_or_https", "doit utiliser http ou https", "must use http or https"},
    {"reason.in_future", "doit être dans le futur", "must be in the future"},
    {"reason.inactive_merchant", "n'est pas un marchand actif", "is not an active merchant"},
    {"reason.inactive_service", "n'est pas un service de paiement actif", "is not an active payment service"},
    {"reason.incorrect", "est incorrect", "is incorrect"},
    {"reason.invalid", "n'est pas valide", "is invalid"},
    {"reason.invalid_port", "a un port invalide", "has an invalid port"},
    {"reason.items_between", "doit avoir de 1 à {max} éléments", "must have 1 to {max} items"},
    {"reason.json_in_form", "doit être un texte JSON dans un formulaire", "must be JSON text in a form post"},
    {"reason.key_nul_character", "les clés ne doivent pas contenir de caractère NUL",
     "keys must not contain NUL characters"},
    {"reason.line_up", "doit valoir « up » (conversion de devise permise) ou être absent",
     "must be \"up\" (currency conversion allowed) or absent"},
    {"reason.link_update_empty", "ne nomme aucun de title, description, expires_at",
     "names none of title, description, expires_at"},
    {"reason.malformed_json", "JSON mal formé : {cause}", "malformed JSON: {cause}"},
    {"reason.matricule", "doit être un matricule de marchand", "must be a merchant matricule"},
    {"reason.merchant_only", "ne peut être fixé que dans une requête signée avec le secret de paiement du marchand",
     "may be set only in a request signed with the merchant's checkout secret"},
    {"reason.more_decimals", "a plus de décimales que permis ({max})", "has more decimals than allowed ({max})"},
    {"reason.must_be_direct", "doit valoir DIRECT", "must be DIRECT"},
    {"reason.no_connector", "aucun connecteur n'est disponible pour {service}",
     "no connector is available for {service}"},
    {"reason.no_credentials", "ne doit pas contenir d'identifiants", "must not contain credentials"},
    {"reason.no_fragment", "ne doit pas contenir de fragment (#)", "must not contain a fragment"},
    {"reason.no_method", "aucun moyen de paiement n'encaisse ce montant en {currency}",
     "no payment method collects this amount in {currency}"},
    {"reason.no_method_fx",
     "aucun moyen de paiement n'encaisse ce montant en {currency} ni dans une devise où un taux le convertit",
     "no payment method collects this amount in {currency} or in a currency an FX rate converts it to"},
    {"reason.no_method_fx_in",
     "aucun moyen de paiement n'encaisse ce montant en {currency} ni dans une devise où un taux le convertit en {area}",
     "no payment method collects this amount in {currency} or in a currency an FX rate converts it to in {area}"},
    {"reason.no_method_in", "aucun moyen de paiement n'encaisse ce montant en {currency} en {area}",
     "no payment method collects this amount in {currency} in {area}"},
    {"reason.no_platform_wallet", "il n'y a pas de portefeuille de la plateforme en {country}",
     "there is no platform wallet in {country}"},
    {"reason.no_session", "cette session de paiement n'existe pas", "no such checkout session"},
    {"reason.not_a_method", "n'est pas un moyen de paiement de ce paiement",
     "is not a payment method of this checkout"},
    {"reason.not_a_number_of", "n'est pas un numéro {service} valide", "is not a valid {service} number"},
    {"reason.not_active", "n'est pas actif", "is not active"},
    {"reason.not_array", "doit être un tableau", "must be an array"},
    {"reason.not_below_min", "ne doit pas être inférieur à min_amount", "must not be below min_amount"},
    {"reason.not_boolean", "doit être un booléen", "must be a boolean"},
    {"reason.not_collecting_in", "n'encaisse pas en {currency}", "does not collect in {currency}"},
    {"reason.not_configured", "n'est pas configuré", "is not configured"},
    {"reason.not_empty", "ne doit pas être vide", "must not be empty"},
    {"reason.not_integer", "doit être un nombre entier", "must be an integer"},
    {"reason.not_negative", "ne doit pas être négatif", "must not be negative"},
    {"reason.not_number", "doit être un nombre", "must be a number"},
    {"reason.not_object", "doit être un objet", "must be an object"},
    {"reason.not_string", "doit être un texte", "must be a string"},
    {"reason.nul_character", "ne doit pas contenir de caractère NUL", "must not contain NUL characters"},
    {"reason.number_of_country", "doit être un numéro de {country} ({dialling_code})",
     "must be a number of {country} ({dialling_code})"},
    {"reason.one_kind_of_line", "chaque ligne a un montant, ou chaque ligne un taux, pas les deux sortes",
     "every line has an amount, or every line a rate, not both kinds"},
    {"reason.open_amount_only", "ne s'applique qu'aux montants libres (sans amount)",
     "applies only to open amounts (no amount)"},
    {"reason.order_busy", "cette commande est modifiée par une autre requête ; réessayez",
     "this order is being changed by another request; retry"},
    {"reason.order_in_progress", "un paiement de cette commande est en cours",
     "a payment of this order is in progress"},
    {"reason.order_other_fields",
     "une session ouverte de cette commande a d'autres champs ; utilisez un nouvel orderId",
     "an open checkout session of this order has other fields; use a new orderId"},
    {"reason.order_paid", "cette commande est déjà payée", "this order is already paid"},
    {"reason.otp_already_sent_customer", "est obligatoire : saisissez le code déjà envoyé sur le téléphone du client",
     "is required: type the code already sent to the customer's phone"},
    {"reason.otp_already_sent_wallet",
     "est obligatoire : saisissez le code déjà envoyé sur le téléphone du portefeuille",
     "is required: type the code already sent to the wallet's phone"},
    {"reason.otp_attempts_exhausted", "trop de tentatives, la transaction est FAILED",
     "too many attempts, the transaction has FAILED"},
    {"reason.otp_by_operator", "est exigé par cet opérateur", "is required by this operator"},
    {"reason.otp_by_service", "est exigé par ce service", "is required by this service"},
    {"reason.otp_not_sent", "aucun code n'a été envoyé pour ce paiement : envoyez-le sans otp pour en recevoir un",
     "no code was sent for this payment: send it without otp to get one"},
    {"reason.otp_sent_customer", "est obligatoire : un code a été envoyé sur le téléphone du client",
     "is required: a code was sent to the customer's phone"},
    {"reason.otp_sent_wallet", "est obligatoire : un code a été envoyé sur le téléphone du portefeuille",
     "is required: a code was sent to the wallet's phone"},
    {"reason.otp_shape", "doit être le code à usage unique : un texte de 4 à 8 chiffres, ou un entier positif ou nul",
     "must be the one-time code: a string of 4 to 8 digits, or a non-negative integer"},
    {"reason.otp_too_long", "a plus de 8 chiffres", "has more than 8 digits"},
    {"reason.otp_verified_concurrently", "a été vérifié par une requête concurrente",
     "was verified by a concurrent request"},
    {"reason.page_out_of_date", "cette page n'est plus à jour : la session a évolué",
     "this page is out of date: the session moved on"},
    {"reason.paid_with", "ce lien se paie avec {service}", "this link is paid with {service}"},
    {"reason.payer_amount", "est obligatoire : ce lien laisse le payeur choisir le montant",
     "is required: this link lets the payer choose the amount"},
    {"reason.payouts_direct", "les versements sont DIRECT", "payouts are DIRECT"},
    {"reason.percentage", "doit être un pourcentage entre 0 et 100", "must be a percentage between 0 and 100"},
    {"reason.phone_characters", "doit contenir uniquement des chiffres, des espaces et un + initial",
     "must contain only digits, spaces and a leading '+'"},
    {"reason.phone_country_prefix", "doit être composé de chiffres avec l'indicatif du pays, ex. 237670000000",
     "must be digits with the country prefix, e.g. 237670000000"},
    {"reason.phone_digits", "doit être composé de chiffres, avec un + initial facultatif",
     "must be digits, with an optional leading +"},
    {"reason.platform_wallet_service",
     "{service} est un service de portefeuille de la plateforme : utilisez WALLET ou AUTO",
     "{service} is a platform wallet service: use WALLET or AUTO"},
    {"reason.positive_minor_units", "doit être un entier positif (unités mineures)",
     "must be a positive integer (minor units)"},
    {"reason.rates_beyond_100", "la somme des taux ne doit pas dépasser 100", "rates must not sum beyond 100"},
    {"reason.rates_sum", "la somme des taux doit valoir 100 (elle vaut {total})",
     "rates must sum to 100 (they sum to {total})"},
    {"reason.repeated", "apparaît plusieurs fois", "appears more than once"},
    {"reason.required", "est obligatoire", "is required"},
    {"reason.reserved_metadata", "est réservé : la plateforme le fixe et il ne peut pas être envoyé",
     "is reserved: the platform sets it and it cannot be sent"},
    {"reason.rotation_lost", "une autre rotation du secret de ce marchand l'a emporté ; réessayez",
     "another rotation of this merchant's secret won; retry"},
    {"reason.same_country_currency", "doit être dans le pays et la devise du service entrant",
     "must be in the country and currency of the incoming service"},
    {"reason.service_currency", "doit être {currency}, la devise de {service}",
     "must be {currency}, the currency of {service}"},
    {"reason.service_inactive", "le service n'est pas actif", "service is not active"},
    {"reason.service_needed", "un service entrant ou sortant est obligatoire",
     "an incoming or an outgoing service is required"},
    {"reason.service_no_country", "le service n'a pas de pays", "the service has no country"},
    {"reason.session_cancelled", "cette session de paiement a été annulée", "this checkout session was cancelled"},
    {"reason.session_expired", "cette session de paiement a expiré", "this checkout session has expired"},
    {"reason.session_in_progress", "un paiement de cette session est en cours",
     "a payment of this session is in progress"},
    {"reason.session_moved_on", "la session a évolué ; rechargez la page", "the session moved on; reload the page"},
    {"reason.set_by_platform", "est fixé par la plateforme et ne peut pas être envoyé",
     "is set by the platform and cannot be sent"},
    {"reason.settlement_mode", "doit valoir DIRECT ou SPLIT", "must be DIRECT or SPLIT"},
    {"reason.short_code", "doit faire de 8 à 12 lettres et chiffres", "must be 8 to 12 letters and digits"},
    {"reason.signature_mismatch",
     "ne correspond pas à orderId, amount, currency, settlement_mode, distribution et feeBearer sous le secret de "
     "paiement du marchand",
     "does not match orderId, amount, currency, settlement_mode, distribution and feeBearer under the merchant's "
     "checkout secret"},
    {"reason.signature_required",
     "est requise : ce marchand n'accepte que les requêtes signées avec son secret de paiement",
     "is required: this merchant accepts only requests signed with its checkout secret"},
    {"reason.single_use_min", "doit être au moins 1 (1 = usage unique)", "must be at least 1 (1 = single use)"},
    {"reason.split_needs_distribution", "est obligatoire avec settlement_mode SPLIT (un tableau non vide)",
     "is required with settlement_mode SPLIT (a non-empty array)"},
    {"reason.split_only", "n'est accepté qu'avec settlement_mode SPLIT", "is only accepted with settlement_mode SPLIT"},
    {"reason.split_rate", "doit être un nombre supérieur à 0 et d'au plus 100, avec au plus 4 décimales",
     "must be a number greater than 0 and at most 100, with at most 4 decimals"},
    {"reason.sum_of_lines", "doit égaler la somme des montants des lignes ({sum})",
     "must equal the sum of the lines' amounts ({sum})"},
    {"reason.too_large", "est trop grand", "is too large"},
    {"reason.too_long", "est trop long", "is too long"},
    {"reason.too_many_digits", "a trop de chiffres", "has too many digits"},
    {"reason.unknown_customer_field", "n'est pas un champ connu (name, email, phone)",
     "is not a known field (name, email, phone)"},
    {"reason.unknown_field", "n'est pas un champ connu", "is not a known field"},
    {"reason.unknown_line_field", "n'est pas un champ connu (matricule, rate, description)",
     "is not a known field (matricule, rate, description)"},
    {"reason.unknown_service", "n'est pas un code de service connu", "is not a known service code"},
    {"reason.unknown_service_key", "service inconnu", "unknown service"},
    {"reason.uuid", "doit être un UUID (8-4-4-4-12 chiffres hexadécimaux)", "must be a UUID (8-4-4-4-12 hex digits)"},
    {"reason.uuid_plain", "doit être un UUID", "must be a UUID"},
    {"reason.wallet_channel_sandbox",
     "le canal WALLET demande le code à usage unique du client, que seule la boîte d'envoi du bac à sable remet tant "
     "qu'aucun transport SMS n'existe",
     "the WALLET channel needs the customer's one-time code, which only the sandbox outbox delivers until an SMS "
     "transport exists"},
    {"reason.whole_minor_units", "doit être un nombre entier d'unités mineures",
     "must be a whole number of minor units"},
    {"reason.whole_number", "doit être un nombre entier", "must be a whole number"},
    {"reason.whole_number_of", "doit être un nombre entier de {currency} (cette devise n'a pas de subdivision)",
     "must be a whole number of {currency} (it has no minor unit)"},
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
