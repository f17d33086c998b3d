/* tests/unit/harness.h: a tiny test harness: TEST_IMPL, ASSERT_* macros that
 * print both operands, the list of tests, and shared parse helpers. */
#ifndef CR_UNIT_HARNESS_H
#define CR_UNIT_HARNESS_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "corral/policy.h"
#include "corral/util.h"

struct cr_test {
	const char *name;
	bool failed;
	char detail[1024];
};

/* Every test, in the order they run. */
#define CR_UNIT_TESTS(X)		\
	X(limit_names)			\
	X(units_time)			\
	X(units_size)			\
	X(units_count)			\
	X(units_zero_rules)		\
	X(units_overflow)		\
	X(units_json_numbers)		\
	X(units_format)			\
	X(units_format_round_trip)	\
	X(jsonloc_lines)		\
	X(jsonloc_arrays)		\
	X(jsonloc_duplicates)		\
	X(jsonloc_strictness)		\
	X(jsonloc_syntax_errors)	\
	X(jsonloc_raw_numbers)		\
	X(policy_minimal)		\
	X(policy_paths)			\
	X(policy_path_errors)		\
	X(policy_unknown_keys)		\
	X(policy_wrong_types)		\
	X(policy_limit_errors)		\
	X(policy_missing)		\
	X(policy_names)			\
	X(policy_net)			\
	X(policy_size_cap)		\
	X(policy_default_file)		\
	X(policy_default_builtin)	\
	X(policy_round_trip)		\
	X(policy_to_json_shape)	\
	X(policy_landlock_keys)	\
	X(request_full)			\
	X(request_minimal)		\
	X(request_errors)		\
	X(request_narrows)		\
	X(task_ids)			\
	X(netdest_good)			\
	X(netdest_bad)			\
	X(fsrules_within)		\
	X(fsrules_access)		\
	X(fsrules_access_matches_definition) \
	X(profile_tables)		\
	X(profile_known_good)		\
	X(profile_policy_key)		\
	X(netmatch_parse)		\
	X(netmatch_closed)		\
	X(netmatch_allow)		\
	X(dnsmsg_query)			\
	X(dnsmsg_answer)		\
	X(dnsmsg_random_bytes)		\
	X(rtnlmsg_dumps)		\
	X(rtnlmsg_gets_and_errors)	\
	X(rtnlmsg_walk)			\
	X(rtnlmsg_random_bytes)		\
	X(tlssni_found)			\
	X(tlssni_not_tls)		\
	X(tlssni_malformed)		\
	X(io_name_norm)			\
	X(io_link_inside)		\
	X(io_tree_digest)		\
	X(io_sha256_argv)		\
	X(taskfd_own_table)		\
	X(termsafe_passes_colour_and_layout)	\
	X(termsafe_shows_the_rest_as_text)	\
	X(termsafe_bounded)		\
	X(termsafe_never_writes_half)	\
	X(path_lexical)		\
	X(u64_set)			\
	X(listcache_kept_until_a_change_is_reported)	\
	X(listcache_change_during_the_listing_keeps_nothing)	\
	X(listcache_pass_drops_what_it_did_not_meet)	\
	X(listcache_bounded)	\
	X(shanon_charges_the_largest)	\
	X(shanon_in_flight_stays)	\
	X(shanon_object_never_charged)	\
	X(shanon_maybe_charged_when_made)	\
	X(shanon_gone_take_the_smallest)	\
	X(shanon_missed_once_is_the_same)	\
	X(shanon_call_in_flight_keeps_a_length)	\
	X(shanon_call_in_flight_unequal)	\
	X(shanon_call_in_flight_makes_one)	\
	X(shanon_gated_until_a_zero_comes)	\
	X(shanon_lines)

#define TEST_IMPL(name) void cr_test_##name(struct cr_test *t_)
#define CR_DECLARE_TEST_(name) TEST_IMPL(name);
CR_UNIT_TESTS(CR_DECLARE_TEST_)
#undef CR_DECLARE_TEST_

void cr_test_failf(struct cr_test *t, const char *file, int line,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#define FAIL_(...)							\
	do {								\
		cr_test_failf(t_, __FILE__, __LINE__, __VA_ARGS__);	\
		return;							\
	} while (0)

#define ASSERT(c)							\
	do {								\
		if (!(c))						\
			FAIL_("ASSERT(%s)", #c);			\
	} while (0)

#define ASSERT_EQ(a, b)							\
	do {								\
		intmax_t a_ = (intmax_t)(a), b_ = (intmax_t)(b);	\
		if (a_ != b_)						\
			FAIL_("ASSERT_EQ(%s, %s): %jd != %jd", #a, #b,	\
			      a_, b_);					\
	} while (0)

#define ASSERT_UEQ(a, b)						\
	do {								\
		uintmax_t a_ = (uintmax_t)(a), b_ = (uintmax_t)(b);	\
		if (a_ != b_)						\
			FAIL_("ASSERT_UEQ(%s, %s): %ju != %ju", #a, #b,	\
			      a_, b_);					\
	} while (0)

#define ASSERT_STREQ(a, b)						\
	do {								\
		const char *a_ = (a), *b_ = (b);			\
		if (!a_ || !b_ || strcmp(a_, b_))			\
			FAIL_("ASSERT_STREQ(%s, %s): \"%s\" != \"%s\"",	\
			      #a, #b, a_ ? a_ : "(null)",		\
			      b_ ? b_ : "(null)");			\
	} while (0)

#define ASSERT_CONTAINS(hay, needle)					\
	do {								\
		const char *h_ = (hay), *n_ = (needle);			\
		if (!h_ || !strstr(h_, n_))				\
			FAIL_("ASSERT_CONTAINS(%s, %s): \"%s\" lacks "	\
			      "\"%s\"", #hay, #needle,			\
			      h_ ? h_ : "(null)", n_);			\
	} while (0)

/* A helper returning NULL on success or a description of the mismatch. */
#define ASSERT_OK_(call)						\
	do {								\
		const char *w_ = (call);				\
		if (w_)							\
			FAIL_("%s", w_);				\
	} while (0)

/* Parse text as a policy (request) and expect rc -EINVAL with every needle
 * in the message. */
#define ASSERT_POLICY_ERR(text, ...)					\
	ASSERT_OK_(cr_test_doc_err(false, (text), __VA_ARGS__, (char *)NULL))
#define ASSERT_REQUEST_ERR(text, ...)					\
	ASSERT_OK_(cr_test_doc_err(true, (text), __VA_ARGS__, (char *)NULL))
#define ASSERT_POLICY_OK(text)						\
	ASSERT_OK_(cr_test_doc_ok(false, (text)))
#define ASSERT_REQUEST_OK(text)						\
	ASSERT_OK_(cr_test_doc_ok(true, (text)))

const char *cr_test_doc_err(bool request, const char *text, ...);
const char *cr_test_doc_ok(bool request, const char *text);

/* A policy with one class "x" laid out on fixed lines: fs on line 5, net on
 * line 6, the limits object on line 7, the limit values on line 8, env on
 * line 10. NULL pieces take a valid default. Returns a static buffer. */
const char *cr_test_policy(const char *fs, const char *net,
			   const char *limits, const char *env);
/* The ten limits, valid, with one replaced by value (raw JSON) or left out
 * when value is NULL. Returns a static buffer. */
const char *cr_test_limits(const char *name, const char *value);

#endif
