#pragma once
// Why a field (or a whole request) is refused, as a value: a Reason and the values its text names
// (core/result.hpp's Problem). Code decides on the reason; the texts (fr and en templates with
// {name} placeholders) live in core/i18n.cpp under "reason.<name>". error.details is the English
// rendering; a page renders the same problems in its customer's language.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/i18n.hpp"
#include "core/result.hpp"

namespace sika {

// To add a reason: name it here, give it its fr and en texts in core/i18n.cpp.
#define SIKA_REASONS(X)           \
  X(a_code)                       \
  X(a_time)                       \
  X(absolute_http_url)            \
  X(allowed_values)               \
  X(alpha2_code)                  \
  X(alpha2_used)                  \
  X(alpha3_at_least_one)          \
  X(alpha3_capitals)              \
  X(alpha3_code)                  \
  X(alpha3_upper)                 \
  X(alpha3_upper_example)         \
  X(already_decided)              \
  X(amount_or_rate)               \
  X(amount_with_rates)            \
  X(api_key_inactive)             \
  X(api_key_required)             \
  X(area_code)                    \
  X(area_currency)                \
  X(area_not_collected)           \
  X(area_unknown)                 \
  X(at_least_amount)              \
  X(at_least_chars)               \
  X(at_least_for_service)         \
  X(at_least_min_amount)          \
  X(at_most)                      \
  X(at_most_bytes)                \
  X(at_most_chars)                \
  X(at_most_days)                 \
  X(at_most_for_service)          \
  X(at_most_items)                \
  X(at_most_json_bytes)           \
  X(at_most_printable)            \
  X(awaits_operator)              \
  X(batch_not_payable)            \
  X(batch_not_pending)            \
  X(between)                      \
  X(between_days)                 \
  X(body_empty)                   \
  X(body_not_object)              \
  X(cap_at_least_amount)          \
  X(catalog_kind)                 \
  X(catalog_not_object)           \
  X(catalog_record)               \
  X(channel)                      \
  X(channel_own_wallet)           \
  X(chars_at_most)                \
  X(choose_method)                \
  X(choose_service)               \
  X(client_id_shape)              \
  X(code_or_null)                 \
  X(connector_name)               \
  X(connector_name_chars)         \
  X(control_characters)           \
  X(country_currency)             \
  X(country_fixed)                \
  X(country_needed)               \
  X(country_not_enabled)          \
  X(country_not_granted)          \
  X(csrf_token)                   \
  X(currency_code)                \
  X(currency_in_use)              \
  X(currency_iso)                 \
  X(currency_iso_plain)           \
  X(currency_iso_shape)           \
  X(currency_iso_upper)           \
  X(currency_letters)             \
  X(currency_not_allowed)         \
  X(currency_not_collected)       \
  X(currency_upper)               \
  X(date_time)                    \
  X(date_time_example)            \
  X(day_date)                     \
  X(days_or_seconds)              \
  X(decimal_number)               \
  X(decimals_in)                  \
  X(delivery_status)              \
  X(dialling_code)                \
  X(dialling_code_plus)           \
  X(differ_from)                  \
  X(digits_after)                 \
  X(digits_at_most_15)            \
  X(digits_leading_plus)          \
  X(duplicate_key)                \
  X(e164_length)                  \
  X(either_of)                    \
  X(email)                        \
  X(endpoint_field)               \
  X(entry_exists)                 \
  X(event_kind_pattern)           \
  X(event_kinds_empty)            \
  X(event_kinds_max)              \
  X(exponent_range)               \
  X(fee_bearer)                   \
  X(fee_exceeds_amount)           \
  X(fee_takes_settlement)         \
  X(fee_type)                     \
  X(fee_value_required)           \
  X(file_importing)               \
  X(fixed_amount)                 \
  X(forced_outcome)               \
  X(foreign_domain)               \
  X(form_content_type)            \
  X(frequency)                    \
  X(fx_rate_shape)                \
  X(given_twice)                  \
  X(grace_period)                 \
  X(greater_than_zero)            \
  X(has_host)                     \
  X(health_state)                 \
  X(hmac_hex)                     \
  X(host_no_address)              \
  X(host_unresolved)              \
  X(http_or_https)                \
  X(idempotency_header)           \
  X(import_lease_lost)            \
  X(import_mode)                  \
  X(in_future)                    \
  X(inactive_merchant)            \
  X(inactive_service)             \
  X(incorrect)                    \
  X(integer_between)              \
  X(integer_one_to)               \
  X(international_digits)         \
  X(international_number)         \
  X(invalid)                      \
  X(invalid_host_name)            \
  X(invalid_port)                 \
  X(items_between)                \
  X(json_in_form)                 \
  X(key_nul_character)            \
  X(line_gets_nothing)            \
  X(line_up)                      \
  X(link_currency)                \
  X(link_in_currency)             \
  X(link_update_empty)            \
  X(longer_than)                  \
  X(malformed_json)               \
  X(matricule)                    \
  X(member_role)                  \
  X(member_role_or_none)          \
  X(merchant_only)                \
  X(month_date)                   \
  X(more_decimals)                \
  X(msisdn_needs_country)         \
  X(must_be_direct)               \
  X(names_host)                   \
  X(no_clearing_account)          \
  X(no_connector)                 \
  X(no_credentials)               \
  X(no_dashboard_role)            \
  X(no_entry)                     \
  X(no_fragment)                  \
  X(no_method)                    \
  X(no_method_fx)                 \
  X(no_method_fx_in)              \
  X(no_method_in)                 \
  X(no_phone_on_file)             \
  X(no_platform_wallet)           \
  X(no_session)                   \
  X(no_settlement_settings)       \
  X(no_such_bank_batch)           \
  X(no_such_change)               \
  X(no_such_item)                 \
  X(no_such_merchant)             \
  X(no_such_run)                  \
  X(no_such_session)              \
  X(no_user_email)                \
  X(not_a_method)                 \
  X(not_a_number_of)              \
  X(not_absolute_url)             \
  X(not_active)                   \
  X(not_array)                    \
  X(not_before_from)              \
  X(not_below_min)                \
  X(not_boolean)                  \
  X(not_collecting_in)            \
  X(not_configured)               \
  X(not_empty)                    \
  X(not_exact_amount)             \
  X(not_exceed)                   \
  X(not_found_short)              \
  X(not_integer)                  \
  X(not_known_merchant)           \
  X(not_member)                   \
  X(not_mobile_of)                \
  X(not_negative)                 \
  X(not_null)                     \
  X(not_number)                   \
  X(not_object)                   \
  X(not_public_target)            \
  X(not_string)                   \
  X(nothing_above_reserve)        \
  X(nul_character)                \
  X(number_not_negative)          \
  X(number_of_country)            \
  X(number_or_none)               \
  X(number_or_null)               \
  X(object_of)                    \
  X(one_kind_of_line)             \
  X(one_of)                       \
  X(one_to_chars)                 \
  X(open_amount_only)             \
  X(operation)                    \
  X(operator_busy)                \
  X(operator_closed)              \
  X(order_busy)                   \
  X(order_in_progress)            \
  X(order_other_fields)           \
  X(order_paid)                   \
  X(other_operator_number)        \
  X(otp_already_sent_customer)    \
  X(otp_already_sent_wallet)      \
  X(otp_attempts_exhausted)       \
  X(otp_by_operator)              \
  X(otp_by_service)               \
  X(otp_not_sent)                 \
  X(otp_sent_customer)            \
  X(otp_sent_wallet)              \
  X(otp_shape)                    \
  X(otp_too_long)                 \
  X(otp_verified_concurrently)    \
  X(over_chars)                   \
  X(own_role)                     \
  X(owners_ask_settlement)        \
  X(owners_change_checkout)       \
  X(owners_change_settings)       \
  X(owners_change_settlement)     \
  X(owners_change_team)           \
  X(owners_read_audit)            \
  X(owners_refund)                \
  X(page_cursor)                  \
  X(page_number)                  \
  X(page_out_of_date)             \
  X(paid_with)                    \
  X(payer_amount)                 \
  X(payouts_direct)               \
  X(percentage)                   \
  X(phone_6_to_15)                \
  X(phone_characters)             \
  X(phone_country_prefix)         \
  X(phone_digits)                 \
  X(platform_wallet_service)      \
  X(positive_amount_in)           \
  X(positive_integer)             \
  X(positive_minor_units)         \
  X(provider_code)                \
  X(public_client_grant)          \
  X(public_client_secret)         \
  X(rate_setter)                  \
  X(rates_beyond_100)             \
  X(rates_sum)                    \
  X(recon_item_kind)              \
  X(recon_item_state)             \
  X(redirect_absolute)            \
  X(redirect_fragment)            \
  X(redirect_host)                \
  X(redirect_https)               \
  X(redirect_https_loopback)      \
  X(redirect_port)                \
  X(refund_beyond)                \
  X(refund_converted)             \
  X(refund_funds)                 \
  X(refund_in_flight)             \
  X(refund_no_channel)            \
  X(refund_nothing_left)          \
  X(refund_reason)                \
  X(refund_status)                \
  X(refund_top_up)                \
  X(regular_expression)           \
  X(repeated)                     \
  X(request_field)                \
  X(required)                     \
  X(required_at_most_chars)       \
  X(required_for)                 \
  X(required_international_phone) \
  X(required_link_key)            \
  X(required_link_reference)      \
  X(required_short)               \
  X(required_user_code)           \
  X(reserve_not_kept)             \
  X(reserved_metadata)            \
  X(rotation_lost)                \
  X(rule_code)                    \
  X(rule_country_service)         \
  X(same_country_currency)        \
  X(scope_needed)                 \
  X(service_code_shape)           \
  X(service_currency)             \
  X(service_inactive)             \
  X(service_kind)                 \
  X(service_needed)               \
  X(service_no_country)           \
  X(session_cancelled)            \
  X(session_expired)              \
  X(session_in_progress)          \
  X(session_moved_on)             \
  X(set_by_platform)              \
  X(settlement_mode)              \
  X(short_code)                   \
  X(signature_mismatch)           \
  X(signature_required)           \
  X(single_use_min)               \
  X(split_needs_distribution)     \
  X(split_only)                   \
  X(split_rate)                   \
  X(statement_importing)          \
  X(sum_of_lines)                 \
  X(time_zone)                    \
  X(time_zone_listed)             \
  X(too_large)                    \
  X(too_long)                     \
  X(too_many_digits)              \
  X(totp_enrolled)                \
  X(transaction_status)           \
  X(unchangeable)                 \
  X(unknown_country)              \
  X(unknown_customer_field)       \
  X(unknown_field)                \
  X(unknown_field_short)          \
  X(unknown_line_field)           \
  X(unknown_merchant)             \
  X(unknown_provider)             \
  X(unknown_scope)                \
  X(unknown_section)              \
  X(unknown_service)              \
  X(unknown_service_key)          \
  X(unregistered_connector)       \
  X(unsupported_host)             \
  X(user_unknown_or_disabled)     \
  X(uuid)                         \
  X(uuid_plain)                   \
  X(viewers_change_nothing)       \
  X(wallet_channel_sandbox)       \
  X(wallet_currency)              \
  X(wallet_of_line)               \
  X(wallet_service_inactive)      \
  X(wallet_service_none)          \
  X(webhook_secret)               \
  X(weekday)                      \
  X(whole_days_between)           \
  X(whole_minor_units)            \
  X(whole_number)                 \
  X(whole_number_of)              \
  X(zero_or_more_minor)

enum class Reason : std::uint16_t {
  text,  // an untyped text, carried as is until its producer gets a reason (not in reason::all)
#define SIKA_REASON_ENUMERATOR(name) name,
  SIKA_REASONS(SIKA_REASON_ENUMERATOR)
#undef SIKA_REASON_ENUMERATOR
};

namespace reason {

// Every reason that has texts (all but Reason::text).
std::span<const Reason> all();
std::string_view name(Reason r);
// The i18n code of the reason's texts: "reason.<name>".
std::string code(Reason r);
// The problem's text in `l`: its reason's template with each {name} replaced by the parameter's value.
std::string text(const Problem& p, i18n::Locale l);
// The {placeholders} of a template, in order of appearance.
std::vector<std::string_view> placeholders(std::string_view tmpl);

// Reasons with parameters.
inline Problem with(Reason r, std::string_view name, std::string value) {
  return Problem(r, {{name, std::move(value)}});
}
inline Problem at_most(std::int64_t max) { return with(Reason::at_most, "max", std::to_string(max)); }
inline Problem at_most_chars(std::int64_t max) { return with(Reason::at_most_chars, "max", std::to_string(max)); }
inline Problem at_most_items(std::int64_t max) { return with(Reason::at_most_items, "max", std::to_string(max)); }
// An untyped text (Reason::text): a details text that arrived without a reason (FieldErrors::add_error).
// Code outside core names a reason instead; scripts/check-untyped.py refuses it there.
inline Problem untyped(std::string text) { return with(Reason::text, "text", std::move(text)); }

}  // namespace reason

// `e` with its details replaced by {field: the English text of p} (details is the text alone when
// field is empty) and p as its problem, e.g. with_problem(conflict(), "orderId", Reason::order_paid).
Error with_problem(Error e, std::string field, Problem p);
// An empty_data error naming one field's problem.
inline Error field_error(std::string field, Problem p) {
  return with_problem(empty_data(nullptr), std::move(field), std::move(p));
}

}  // namespace sika
