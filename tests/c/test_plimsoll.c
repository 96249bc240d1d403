/*
 * The C ABI from C: every handle made and freed, every status checked, run
 * under valgrind and AddressSanitizer by tests/c/run.sh.
 *
 * Environment:
 *   PLIMSOLL_TEST_URL, PLIMSOLL_TEST_TOKEN  a running plimsolld with the disabled
 *                                          provider and its bearer token
 *   PLIMSOLL_TEST_WASM_URL                  one with the wasm provider (same token);
 *                                          remote tests are skipped when unset
 *   PLIMSOLL_VECTORS_TSV                    the shared verification vectors
 *                                          (tests/vectors/verify.json, one case a
 *                                          line: expect, name, request, response,
 *                                          tab-separated); required
 *   PLIMSOLL_TEST_WASM=1                    an embedded wasm engine must start;
 *                     =0                    skip it (valgrind cannot map wasmtime's
 *                                          memory pool); unset: skip if unavailable
 */
#define _POSIX_C_SOURCE 200809L /* getline */

#include "plimsoll.h"
#include "plimsoll.h" /* twice: the include guard must hold */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed;
static int failed;

#define CHECK(cond)                                                              \
  do {                                                                           \
    if (cond) {                                                                  \
      passed++;                                                                  \
    } else {                                                                     \
      failed++;                                                                  \
      fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);           \
    }                                                                            \
  } while (0)

#define CHECK_STATUS(got, want)                                                  \
  do {                                                                           \
    plimsoll_status got_ = (got);                                                \
    if (got_ == (want)) {                                                        \
      passed++;                                                                  \
    } else {                                                                     \
      failed++;                                                                  \
      fprintf(stderr, "FAIL %s:%d: status %u (%s), want %s\n", __FILE__,        \
              __LINE__, (unsigned)got_, plimsoll_status_name(got_), #want);     \
    }                                                                            \
  } while (0)

static int streq(const char *a, const char *b) {
  return a != NULL && b != NULL && strcmp(a, b) == 0;
}

static int contains(const char *hay, const char *needle) {
  return hay != NULL && strstr(hay, needle) != NULL;
}

static int slice_is(plimsoll_slice s, const char *want) {
  size_t n = strlen(want);
  return s.len == n && (n == 0 || (s.data != NULL && memcmp(s.data, want, n) == 0));
}

/* Makes an engine from NULL-terminated key/value pairs. */
/* A field of an answer by path (docs/fields.md); a failed read is a failed check. */
static plimsoll_value field(const plimsoll_response *r, const char *path) {
  plimsoll_value v;
  memset(&v, 0, sizeof v);
  CHECK_STATUS(plimsoll_response_get(r, path, &v, NULL), PLIMSOLL_STATUS_OK);
  return v;
}

static const char *field_text(const plimsoll_response *r, const char *path) {
  plimsoll_value v = field(r, path);
  CHECK(v.kind == PLIMSOLL_VALUE_KIND_TEXT);
  return v.kind == PLIMSOLL_VALUE_KIND_TEXT ? v.text : "";
}

static int64_t field_int(const plimsoll_response *r, const char *path) {
  plimsoll_value v = field(r, path);
  CHECK(v.kind == PLIMSOLL_VALUE_KIND_INTEGER || v.kind == PLIMSOLL_VALUE_KIND_LIST);
  return v.kind == PLIMSOLL_VALUE_KIND_LIST ? (int64_t)v.count : v.integer;
}

static bool field_flag(const plimsoll_response *r, const char *path) {
  plimsoll_value v = field(r, path);
  CHECK(v.kind == PLIMSOLL_VALUE_KIND_FLAG);
  return v.flag;
}

static plimsoll_slice field_bytes(const plimsoll_response *r, const char *path) {
  plimsoll_value v = field(r, path);
  CHECK(v.kind == PLIMSOLL_VALUE_KIND_BYTES);
  return v.bytes;
}

static plimsoll_client *engine(const char *const *pairs, plimsoll_status *status_out,
                               plimsoll_error **error_out) {
  plimsoll_config *config = NULL;
  plimsoll_client *client = NULL;
  plimsoll_status st = plimsoll_config_new(&config, NULL);
  for (size_t i = 0; st == PLIMSOLL_STATUS_OK && pairs != NULL && pairs[i] != NULL; i += 2) {
    st = plimsoll_config_set(config, pairs[i], pairs[i + 1], error_out);
  }
  if (st == PLIMSOLL_STATUS_OK) {
    st = plimsoll_client_new_engine(config, &client, error_out);
  }
  plimsoll_config_free(config);
  if (status_out != NULL) {
    *status_out = st;
  }
  return client;
}

static plimsoll_request *snippet(const char *code) {
  plimsoll_request *r = NULL;
  plimsoll_status st = plimsoll_request_new_javascript(code, &r, NULL);
  CHECK_STATUS(st, PLIMSOLL_STATUS_OK);
  return r;
}

/* Runs `request` and checks the failure's status and not-dispatched reason. */
static void expect_refusal(const plimsoll_client *client, const plimsoll_request *request,
                           plimsoll_status want, uint32_t reason) {
  plimsoll_response *resp = NULL;
  plimsoll_error *err = NULL;
  plimsoll_status st = plimsoll_client_run(client, request, NULL, &resp, &err);
  CHECK_STATUS(st, want);
  CHECK(resp == NULL); /* outputs only on success */
  CHECK(err != NULL);
  CHECK(plimsoll_error_status(err) == want);
  CHECK(plimsoll_error_not_dispatched(err) == reason);
  CHECK(strlen(plimsoll_error_message(err)) > 0);
  plimsoll_error_free(err);
  plimsoll_response_free(resp);
}

static void test_version(void) {
  const char *v = plimsoll_version();
  unsigned major = 0, minor = 0, patch = 0;
  CHECK(contains(v, "plimsoll/" PLIMSOLL_VERSION));
  CHECK(sscanf(v, "plimsoll/%u.%u.%u", &major, &minor, &patch) == 3);
  CHECK(major == PLIMSOLL_VERSION_MAJOR && minor == PLIMSOLL_VERSION_MINOR &&
        patch == PLIMSOLL_VERSION_PATCH);
  CHECK(PLIMSOLL_VERSION_NUMBER == ((major << 16) | (minor << 8) | patch));
}

static void test_status_table(void) {
  static const char *const codes[] = {
      "ok",           "invalid_request",     "protocol_missing",       "protocol_mismatch",
      "unauthenticated", "permission_denied", "disabled",              "unsupported",
      "insufficient_isolation", "software_mismatch", "at_capacity",    "session_ended",
      "infrastructure", "cancelled",         "deadline_exceeded",      "record_mismatch",
      "isolation_evidence_mismatch", "transport"};
  for (uint32_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
    CHECK(streq(plimsoll_status_name(i), codes[i]));
    CHECK(strlen(plimsoll_status_message(i)) > 0);
  }
  CHECK(PLIMSOLL_STATUS_TRANSPORT == 17);
  CHECK(streq(plimsoll_status_name(18), "unknown"));
  CHECK(streq(plimsoll_status_name(PLIMSOLL_STATUS_NULL_ARGUMENT), "null_argument"));
  CHECK(streq(plimsoll_status_name(PLIMSOLL_STATUS_INVALID_UTF8), "invalid_utf8"));
  CHECK(streq(plimsoll_status_name(PLIMSOLL_STATUS_INVALID_ARGUMENT), "invalid_argument"));
  CHECK(streq(plimsoll_status_name(PLIMSOLL_STATUS_CONFIG), "config"));
  CHECK(streq(plimsoll_status_name(PLIMSOLL_STATUS_CLOSED), "closed"));
  CHECK(streq(plimsoll_status_name(PLIMSOLL_STATUS_PANIC), "panic"));
  CHECK(streq(plimsoll_status_message(4242), "unknown status"));
}

static void test_null_arguments(void) {
  plimsoll_error *err = NULL;
  plimsoll_request *r = NULL;
  CHECK_STATUS(plimsoll_request_new_javascript(NULL, &r, &err), PLIMSOLL_STATUS_NULL_ARGUMENT);
  CHECK(r == NULL);
  CHECK(contains(plimsoll_error_message(err), "code"));
  CHECK(plimsoll_error_not_dispatched(err) == 1);
  CHECK(streq(plimsoll_error_not_dispatched_name(err), "request"));
  plimsoll_error_free(err);
  /* No error object asked for: the status alone. */
  CHECK_STATUS(plimsoll_request_new_javascript("1", NULL, NULL), PLIMSOLL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(plimsoll_config_new(NULL, NULL), PLIMSOLL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(plimsoll_client_new_engine(NULL, NULL, NULL), PLIMSOLL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(plimsoll_client_run(NULL, NULL, NULL, NULL, NULL), PLIMSOLL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(plimsoll_verify_record(NULL, "{}", NULL), PLIMSOLL_STATUS_NULL_ARGUMENT);
  /* Getters give their fallback; frees accept NULL. */
  CHECK(plimsoll_error_status(NULL) == PLIMSOLL_STATUS_NULL_ARGUMENT);
  CHECK(streq(plimsoll_error_message(NULL), ""));
  {
    plimsoll_value v;
    CHECK_STATUS(plimsoll_response_get(NULL, "exit_code", &v, NULL), PLIMSOLL_STATUS_NULL_ARGUMENT);
  }
  CHECK(streq(plimsoll_request_json(NULL), ""));
  CHECK(plimsoll_session_ended(NULL) == 0);
  plimsoll_error_free(NULL);
  plimsoll_config_free(NULL);
  plimsoll_client_free(NULL);
  plimsoll_request_free(NULL);
  plimsoll_response_free(NULL);
  plimsoll_session_free(NULL);
  plimsoll_description_free(NULL);
  plimsoll_cancel_free(NULL);
  plimsoll_chain_free(NULL);
  plimsoll_cancel_trigger(NULL);
}

static void test_config(void) {
  plimsoll_config *config = NULL;
  plimsoll_error *err = NULL;
  plimsoll_status st;
  CHECK_STATUS(plimsoll_config_new(&config, NULL), PLIMSOLL_STATUS_OK);
  CHECK_STATUS(plimsoll_config_set(config, "SANDBOX_BOGUS", "1", &err),
               PLIMSOLL_STATUS_INVALID_ARGUMENT);
  CHECK(contains(plimsoll_error_message(err), "SANDBOX_BOGUS"));
  plimsoll_error_free(err);
  err = NULL;
  CHECK_STATUS(plimsoll_config_set(config, "SANDBOX_PROVIDER", "\xff", &err),
               PLIMSOLL_STATUS_INVALID_UTF8);
  plimsoll_error_free(err);
  err = NULL;
  /* Any other key is kept (a grants file may name it as a secret). */
  CHECK_STATUS(plimsoll_config_set(config, "ITEMS_TOKEN", "x", NULL), PLIMSOLL_STATUS_OK);
  plimsoll_config_free(config);

  {
    const char *const bad[] = {"SANDBOX_PROVIDER", "magic", NULL};
    plimsoll_client *c = engine(bad, &st, &err);
    CHECK_STATUS(st, PLIMSOLL_STATUS_CONFIG);
    CHECK(c == NULL);
    CHECK(contains(plimsoll_error_message(err), "SANDBOX_PROVIDER"));
    plimsoll_error_free(err);
    err = NULL;
  }
  {
    const char *const impossible[] = {"SANDBOX_MIN_ISOLATION", "vm", NULL};
    plimsoll_client *c = engine(impossible, &st, &err);
    CHECK_STATUS(st, PLIMSOLL_STATUS_INSUFFICIENT_ISOLATION);
    CHECK(c == NULL);
    CHECK(contains(plimsoll_error_message(err), "SANDBOX_MIN_ISOLATION"));
    plimsoll_error_free(err);
    err = NULL;
  }
}

static void test_requests(void) {
  plimsoll_request *r = snippet("console.log(1)");
  plimsoll_request *p = NULL;
  plimsoll_request *back = NULL;
  plimsoll_error *err = NULL;
  const char *ids[] = {"a", "b"};
  const char *json;
  CHECK(streq(plimsoll_request_kind(r), "javascript"));
  CHECK_STATUS(plimsoll_request_add_step(r, "true", &err), PLIMSOLL_STATUS_INVALID_ARGUMENT);
  plimsoll_error_free(err);
  err = NULL;
  CHECK_STATUS(plimsoll_request_set_timeout_ms(r, 5000, NULL), PLIMSOLL_STATUS_OK);
  CHECK_STATUS(plimsoll_request_set_trace_id(r, "t-1", NULL), PLIMSOLL_STATUS_OK);
  CHECK_STATUS(plimsoll_request_set_minimum_isolation(r, "process", NULL), PLIMSOLL_STATUS_OK);
  CHECK_STATUS(plimsoll_request_set_software_rule(r, "approved", ids, 2, NULL),
               PLIMSOLL_STATUS_OK);
  CHECK_STATUS(plimsoll_request_set_software_rule(r, "approved", NULL, 2, NULL),
               PLIMSOLL_STATUS_NULL_ARGUMENT);
  json = plimsoll_request_json(r);
  CHECK(contains(json, "\"protocol\":4"));
  CHECK(contains(json, "\"minimumIsolation\":\"process\""));
  CHECK(contains(json, "\"timeoutMs\":5000"));
  CHECK(contains(json, "\"identities\":[\"a\",\"b\"]"));
  CHECK_STATUS(plimsoll_request_from_json(json, &back, NULL), PLIMSOLL_STATUS_OK);
  CHECK(streq(plimsoll_request_json(back), json));
  plimsoll_request_free(back);
  back = NULL;
  CHECK_STATUS(plimsoll_request_set_software_rule(r, NULL, NULL, 0, NULL), PLIMSOLL_STATUS_OK);
  CHECK(!contains(plimsoll_request_json(r), "softwareRule"));

  CHECK_STATUS(plimsoll_request_new_project(&p, NULL), PLIMSOLL_STATUS_OK);
  CHECK_STATUS(plimsoll_request_add_step(p, "echo hi > out.txt", NULL), PLIMSOLL_STATUS_OK);
  CHECK_STATUS(plimsoll_request_add_file(p, "in.txt", (const uint8_t *)"abc", 3, NULL),
               PLIMSOLL_STATUS_OK);
  CHECK_STATUS(plimsoll_request_add_file(p, "bad.txt", (const uint8_t *)"\xc3", 1, NULL),
               PLIMSOLL_STATUS_INVALID_UTF8);
  CHECK_STATUS(plimsoll_request_add_artifact(p, "out.txt", NULL), PLIMSOLL_STATUS_OK);
  CHECK_STATUS(plimsoll_request_set_grant_profile(p, "", NULL), PLIMSOLL_STATUS_OK);
  CHECK(streq(plimsoll_request_kind(p), "project"));
  CHECK(contains(plimsoll_request_json(p), "\"artifacts\":[\"out.txt\"]"));

  CHECK_STATUS(plimsoll_request_from_json("{\"protocol\":4}", &back, &err),
               PLIMSOLL_STATUS_INVALID_REQUEST);
  CHECK(back == NULL);
  plimsoll_error_free(err);
  err = NULL;
  CHECK_STATUS(plimsoll_request_from_json("not json", &back, NULL),
               PLIMSOLL_STATUS_INVALID_ARGUMENT);
  plimsoll_request_free(p);
  plimsoll_request_free(r);
}

/* Refusals every engine gives before anything runs, whatever its provider. */
static void refusals_before_dispatch(const plimsoll_client *client) {
  plimsoll_request *r = NULL;
  r = snippet("");
  expect_refusal(client, r, PLIMSOLL_STATUS_INVALID_REQUEST, 1);
  plimsoll_request_free(r);
  CHECK_STATUS(plimsoll_request_from_json("{\"protocol\":5,\"javascript\":{\"code\":\"1\"}}", &r, NULL),
               PLIMSOLL_STATUS_OK);
  expect_refusal(client, r, PLIMSOLL_STATUS_PROTOCOL_MISMATCH, 3);
  plimsoll_request_free(r);
  CHECK_STATUS(plimsoll_request_from_json("{\"javascript\":{\"code\":\"1\"}}", &r, NULL),
               PLIMSOLL_STATUS_OK);
  expect_refusal(client, r, PLIMSOLL_STATUS_PROTOCOL_MISSING, 3);
  plimsoll_request_free(r);
  r = snippet("1");
  CHECK_STATUS(plimsoll_request_set_minimum_isolation(r, "vm", NULL), PLIMSOLL_STATUS_OK);
  expect_refusal(client, r, PLIMSOLL_STATUS_INSUFFICIENT_ISOLATION, 5);
  plimsoll_request_free(r);
  {
    plimsoll_cancel *cancel = NULL;
    plimsoll_response *resp = NULL;
    plimsoll_error *err = NULL;
    r = snippet("1");
    CHECK_STATUS(plimsoll_cancel_new(&cancel, NULL), PLIMSOLL_STATUS_OK);
    plimsoll_cancel_trigger(cancel);
    CHECK_STATUS(plimsoll_client_run(client, r, cancel, &resp, &err), PLIMSOLL_STATUS_CANCELLED);
    CHECK(resp == NULL);
    CHECK(plimsoll_error_not_dispatched(err) == 1);
    plimsoll_error_free(err);
    plimsoll_cancel_free(cancel);
    plimsoll_request_free(r);
  }
}

static void test_disabled_engine(void) {
  plimsoll_status st;
  plimsoll_error *err = NULL;
  plimsoll_client *client = engine(NULL, &st, NULL);
  plimsoll_description *d = NULL;
  plimsoll_request *r;
  plimsoll_session *s = NULL;
  CHECK_STATUS(st, PLIMSOLL_STATUS_OK);
  if (client == NULL) {
    return;
  }
  CHECK_STATUS(plimsoll_client_describe(client, &d, NULL), PLIMSOLL_STATUS_OK);
  CHECK(streq(plimsoll_description_sandbox(d), "disabled"));
  CHECK(streq(plimsoll_description_isolation(d), "none"));
  CHECK(plimsoll_description_protocol(d) == 4);
  CHECK(!plimsoll_description_supports_sessions(d));
  CHECK(contains(plimsoll_description_json(d), "\"sandbox\":\"disabled\""));
  plimsoll_description_free(d);

  r = snippet("console.log(6*7)");
  expect_refusal(client, r, PLIMSOLL_STATUS_DISABLED, 4);
  plimsoll_request_free(r);
  refusals_before_dispatch(client);

  CHECK_STATUS(plimsoll_client_open_session(client, NULL, &s, &err), PLIMSOLL_STATUS_DISABLED);
  CHECK(s == NULL);
  CHECK(plimsoll_error_not_dispatched(err) == 4);
  plimsoll_error_free(err);
  err = NULL;
  CHECK_STATUS(plimsoll_client_open_session(client, "{\"lifetimeMs\":", &s, &err),
               PLIMSOLL_STATUS_INVALID_ARGUMENT);
  plimsoll_error_free(err);
  plimsoll_client_free(client);
}

struct worker {
  const plimsoll_client *client;
  const char *code;
  plimsoll_status want;
  int ok;
};

static void *work(void *arg) {
  struct worker *w = arg;
  w->ok = 1;
  for (int i = 0; i < 5; i++) {
    plimsoll_request *r = NULL;
    plimsoll_response *resp = NULL;
    if (plimsoll_request_new_javascript(w->code, &r, NULL) != PLIMSOLL_STATUS_OK ||
        plimsoll_client_run(w->client, r, NULL, &resp, NULL) != w->want) {
      w->ok = 0;
    }
    plimsoll_response_free(resp);
    plimsoll_request_free(r);
  }
  return NULL;
}

/* One client used from several threads at once. */
static void threads(const plimsoll_client *client, const char *code, plimsoll_status want) {
  struct worker w[3];
  pthread_t t[3];
  for (int i = 0; i < 3; i++) {
    w[i].client = client;
    w[i].code = code;
    w[i].want = want;
    CHECK(pthread_create(&t[i], NULL, work, &w[i]) == 0);
  }
  for (int i = 0; i < 3; i++) {
    CHECK(pthread_join(t[i], NULL) == 0);
    CHECK(w[i].ok);
  }
}

static void test_threads_disabled(void) {
  plimsoll_client *client = engine(NULL, NULL, NULL);
  CHECK(client != NULL);
  if (client != NULL) {
    threads(client, "1", PLIMSOLL_STATUS_DISABLED);
  }
  plimsoll_client_free(client);
}

static void test_verify_inputs(void) {
  plimsoll_error *err = NULL;
  const char *req = "{\"protocol\":4,\"javascript\":{\"code\":\"1\"}}";
  plimsoll_chain *chain = NULL;
  CHECK_STATUS(plimsoll_verify_record(req, "{\"sandbox\":\"wasm\",\"javascript\":{}}", &err),
               PLIMSOLL_STATUS_RECORD_MISMATCH);
  CHECK(plimsoll_error_not_dispatched(err) == 0);
  plimsoll_error_free(err);
  /* An answer that does not parse is malformed: a transport error, as in every
   * language (the published client's MalformedResponseError); a request that
   * does not parse is an invalid request. */
  CHECK_STATUS(plimsoll_verify_record(req, "[]", NULL), PLIMSOLL_STATUS_TRANSPORT);
  CHECK_STATUS(plimsoll_verify_record("[]", "{}", NULL), PLIMSOLL_STATUS_INVALID_REQUEST);
  CHECK_STATUS(plimsoll_chain_new("abc", &chain, NULL), PLIMSOLL_STATUS_OK);
  CHECK(plimsoll_chain_calls(chain) == 0);
  CHECK(streq(plimsoll_chain_last(chain), ""));
  CHECK_STATUS(plimsoll_chain_check_close(chain, "abc", 0, "", NULL), PLIMSOLL_STATUS_OK);
  CHECK_STATUS(plimsoll_chain_check_close(chain, "abc", 1, "", NULL),
               PLIMSOLL_STATUS_RECORD_MISMATCH);
  CHECK_STATUS(plimsoll_chain_check_call(chain, req, "{\"javascript\":{}}", NULL),
               PLIMSOLL_STATUS_RECORD_MISMATCH);
  CHECK(plimsoll_chain_calls(chain) == 0);
  plimsoll_chain_free(chain);
}

/* A verified answer: its record holds, and a tampered copy does not. */
static void check_record(const plimsoll_response *resp) {
  const char *req = field_text(resp, "request_json");
  const char *json = field_text(resp, "response_json");
  const char *sha = field_text(resp, "record.record_sha256");
  plimsoll_error *err = NULL;
  char *tampered;
  char *at;
  CHECK(strlen(sha) == 64);
  CHECK(contains(field_text(resp, "record_json"), sha));
  CHECK_STATUS(plimsoll_verify_record(req, json, NULL), PLIMSOLL_STATUS_OK);
  /* Change one byte of the kept stdout ("NDIK" is base64 of "42\n"). */
  tampered = malloc(strlen(json) + 1);
  CHECK(tampered != NULL);
  if (tampered == NULL) {
    return;
  }
  strcpy(tampered, json);
  at = strstr(tampered, "\"stdout\":\"");
  CHECK(at != NULL);
  if (at != NULL) {
    at += strlen("\"stdout\":\"");
    *at = *at == 'A' ? 'B' : 'A';
    CHECK_STATUS(plimsoll_verify_record(req, tampered, &err), PLIMSOLL_STATUS_RECORD_MISMATCH);
    CHECK(contains(plimsoll_error_message(err), "result digest"));
    plimsoll_error_free(err);
  }
  free(tampered);
}

static plimsoll_client *wasm_engine(int required) {
  const char *const pairs[] = {"SANDBOX_PROVIDER", "wasm", "SANDBOX_RATE_PER_MIN", "0", NULL};
  plimsoll_status st;
  plimsoll_error *err = NULL;
  plimsoll_client *client = engine(pairs, &st, &err);
  if (client == NULL) {
    if (required) {
      CHECK_STATUS(st, PLIMSOLL_STATUS_OK);
      fprintf(stderr, "wasm engine: %s\n", plimsoll_error_message(err));
    } else {
      fprintf(stderr, "SKIP wasm: %s\n", plimsoll_error_message(err));
    }
  }
  plimsoll_error_free(err);
  return client;
}

/* Real snippets on a wasm engine or daemon: answers, records, refusals. */
static void wasm_checks(const plimsoll_client *client) {
  plimsoll_request *r;
  plimsoll_response *resp = NULL;
  plimsoll_description *d = NULL;
  plimsoll_session *s = NULL;
  plimsoll_error *err = NULL;
  CHECK_STATUS(plimsoll_client_describe(client, &d, NULL), PLIMSOLL_STATUS_OK);
  CHECK(streq(plimsoll_description_sandbox(d), "wasm"));
  CHECK(streq(plimsoll_description_isolation(d), "process"));
  plimsoll_description_free(d);

  r = snippet("console.log(6*7)");
  CHECK_STATUS(plimsoll_client_run(client, r, NULL, &resp, &err), PLIMSOLL_STATUS_OK);
  if (err != NULL) {
    fprintf(stderr, "run: %s\n", plimsoll_error_message(err));
  }
  plimsoll_error_free(err);
  err = NULL;
  plimsoll_request_free(r);
  CHECK(resp != NULL);
  if (resp != NULL) {
    CHECK(slice_is(field_bytes(resp, "stdout"), "42\n"));
    CHECK(slice_is(field_bytes(resp, "stderr"), ""));
    CHECK(field_int(resp, "exit_code") == 0);
    CHECK(!field_flag(resp, "timed_out"));
    CHECK(!field_flag(resp, "stdout_truncated"));
    CHECK(streq(field_text(resp, "kind"), "javascript"));
    CHECK(streq(field_text(resp, "sandbox"), "wasm"));
    CHECK(streq(field_text(resp, "isolation"), "process"));
    CHECK(field_int(resp, "record.sequence") == 0);
    {
      plimsoll_value v;
      plimsoll_error *e = NULL;
      /* A snippet has no steps: another kind's field is refused, by name. */
      CHECK_STATUS(plimsoll_response_get(resp, "steps", &v, &e), PLIMSOLL_STATUS_INVALID_ARGUMENT);
      CHECK(contains(plimsoll_error_message(e), "\"steps\""));
      plimsoll_error_free(e);
      CHECK_STATUS(plimsoll_response_get(resp, "nope", &v, NULL), PLIMSOLL_STATUS_INVALID_ARGUMENT);
      CHECK_STATUS(plimsoll_response_get(resp, "stdout", NULL, NULL), PLIMSOLL_STATUS_NULL_ARGUMENT);
    }
    CHECK(field(resp, "session_end").kind == PLIMSOLL_VALUE_KIND_NONE);
    /* Where its time went, as the answer's JSON carries it. */
    CHECK(contains(field_text(resp, "phases_json"), "{\"phase\":\"admitted\",\"ms\":"));
    check_record(resp);
  }
  plimsoll_response_free(resp);
  resp = NULL;

  /* A non-zero exit is an answer, not an error. */
  r = snippet("console.error('no'); process.exit(3)");
  CHECK_STATUS(plimsoll_client_run(client, r, NULL, &resp, NULL), PLIMSOLL_STATUS_OK);
  CHECK(field_int(resp, "exit_code") == 3);
  CHECK(slice_is(field_bytes(resp, "stderr"), "no\n"));
  plimsoll_response_free(resp);
  resp = NULL;
  plimsoll_request_free(r);

  /* A deadline ends it with 124 and the flag. */
  r = snippet("for(;;){}");
  CHECK_STATUS(plimsoll_request_set_timeout_ms(r, 300, NULL), PLIMSOLL_STATUS_OK);
  CHECK_STATUS(plimsoll_client_run(client, r, NULL, &resp, NULL), PLIMSOLL_STATUS_OK);
  CHECK(field_flag(resp, "timed_out"));
  CHECK(field_int(resp, "exit_code") == 124);
  plimsoll_response_free(resp);
  resp = NULL;
  plimsoll_request_free(r);

  /* Output past the cap is flagged, never marked inside. */
  r = snippet("const s = 'x'.repeat(1 << 20); for (let i = 0; i < 8; i++) console.log(s)");
  CHECK_STATUS(plimsoll_client_run(client, r, NULL, &resp, NULL), PLIMSOLL_STATUS_OK);
  CHECK(field_flag(resp, "stdout_truncated"));
  CHECK(field_bytes(resp, "stdout").len > 0);
  plimsoll_response_free(resp);
  resp = NULL;
  plimsoll_request_free(r);

  refusals_before_dispatch(client);
  {
    plimsoll_request *p = NULL;
    CHECK_STATUS(plimsoll_request_new_project(&p, NULL), PLIMSOLL_STATUS_OK);
    CHECK_STATUS(plimsoll_request_add_step(p, "true", NULL), PLIMSOLL_STATUS_OK);
    expect_refusal(client, p, PLIMSOLL_STATUS_UNSUPPORTED, 4);
    plimsoll_request_free(p);
  }
  {
    const char *ids[] = {"not-this-software"};
    r = snippet("1");
    CHECK_STATUS(plimsoll_request_set_software_rule(r, "exact", ids, 1, NULL), PLIMSOLL_STATUS_OK);
    expect_refusal(client, r, PLIMSOLL_STATUS_SOFTWARE_MISMATCH, 7);
    plimsoll_request_free(r);
  }
  /* The wasm provider keeps no sessions. */
  CHECK_STATUS(plimsoll_client_open_session(client, NULL, &s, &err), PLIMSOLL_STATUS_UNSUPPORTED);
  CHECK(s == NULL);
  CHECK(plimsoll_error_not_dispatched(err) == 4);
  plimsoll_error_free(err);
  threads(client, "console.log(1)", PLIMSOLL_STATUS_OK);
}

static void test_wasm_engine(int required) {
  plimsoll_client *client = wasm_engine(required);
  plimsoll_request *r;
  plimsoll_response *resp = NULL;
  if (client == NULL) {
    return;
  }
  wasm_checks(client);
  plimsoll_client_free(client);

  /* A rate limit sheds, never queues. */
  {
    const char *const pairs[] = {"SANDBOX_PROVIDER", "wasm", "SANDBOX_RATE_PER_MIN", "1", NULL};
    client = engine(pairs, NULL, NULL);
    CHECK(client != NULL);
    r = snippet("1");
    CHECK_STATUS(plimsoll_client_run(client, r, NULL, &resp, NULL), PLIMSOLL_STATUS_OK);
    plimsoll_response_free(resp);
    resp = NULL;
    expect_refusal(client, r, PLIMSOLL_STATUS_AT_CAPACITY, 6);
    plimsoll_request_free(r);
    plimsoll_client_free(client);
  }
}

static void test_wasm_remote(const char *url, const char *token) {
  plimsoll_client *client = NULL;
  CHECK_STATUS(plimsoll_client_new_remote(url, token, false, &client, NULL), PLIMSOLL_STATUS_OK);
  if (client != NULL) {
    wasm_checks(client);
  }
  plimsoll_client_free(client);
}

static void test_remote(const char *url, const char *token) {
  plimsoll_client *client = NULL;
  plimsoll_client *anon = NULL;
  plimsoll_client *nowhere = NULL;
  plimsoll_description *d = NULL;
  plimsoll_request *r = snippet("console.log(6*7)");
  plimsoll_session *s = NULL;
  plimsoll_error *err = NULL;

  CHECK_STATUS(plimsoll_client_new_remote("ftp://x", NULL, false, &client, NULL),
               PLIMSOLL_STATUS_INVALID_REQUEST);
  CHECK_STATUS(plimsoll_client_new_remote(url, token, false, &client, NULL), PLIMSOLL_STATUS_OK);
  if (client == NULL) {
    plimsoll_request_free(r);
    return;
  }
  CHECK_STATUS(plimsoll_client_describe(client, &d, NULL), PLIMSOLL_STATUS_OK);
  CHECK(streq(plimsoll_description_sandbox(d), "disabled"));
  CHECK(plimsoll_description_protocol(d) == 4);
  plimsoll_description_free(d);
  expect_refusal(client, r, PLIMSOLL_STATUS_DISABLED, 4);
  refusals_before_dispatch(client);
  CHECK_STATUS(plimsoll_client_open_session(client, NULL, &s, &err), PLIMSOLL_STATUS_DISABLED);
  CHECK(plimsoll_error_not_dispatched(err) == 4);
  plimsoll_error_free(err);
  threads(client, "1", PLIMSOLL_STATUS_DISABLED);

  /* Without the token: refused before anything runs. */
  CHECK_STATUS(plimsoll_client_new_remote(url, NULL, false, &anon, NULL), PLIMSOLL_STATUS_OK);
  expect_refusal(anon, r, PLIMSOLL_STATUS_UNAUTHENTICATED, 2);

  /* Nothing listens there: the transport fails. */
  CHECK_STATUS(plimsoll_client_new_remote("http://127.0.0.1:9", NULL, false, &nowhere, NULL),
               PLIMSOLL_STATUS_OK);
  {
    plimsoll_response *resp = NULL;
    CHECK_STATUS(plimsoll_client_run(nowhere, r, NULL, &resp, NULL), PLIMSOLL_STATUS_TRANSPORT);
    CHECK(resp == NULL);
  }
  plimsoll_client_free(nowhere);
  plimsoll_client_free(anon);
  plimsoll_client_free(client);
  plimsoll_request_free(r);
}

/* The shared verification vectors, replayed by the Python, Node and Go suites
 * too: each case verifies or fails with the same code in every language. */
static void test_shared_vectors(const char *path) {
  CHECK(path != NULL && *path != '\0');
  if (path == NULL || *path == '\0') {
    fprintf(stderr, "FAIL: PLIMSOLL_VECTORS_TSV is unset (tests/c/run.sh sets it)\n");
    return;
  }
  FILE *f = fopen(path, "r");
  CHECK(f != NULL);
  if (f == NULL) {
    return;
  }
  char *line = NULL;
  size_t cap = 0;
  int cases = 0;
  while (getline(&line, &cap, f) > 0) {
    line[strcspn(line, "\n")] = '\0';
    char *expect = strtok(line, "\t");
    char *name = strtok(NULL, "\t");
    char *request = strtok(NULL, "\t");
    char *response = strtok(NULL, "\t");
    CHECK(expect != NULL && name != NULL && request != NULL && response != NULL);
    if (response == NULL) {
      continue;
    }
    plimsoll_status st = plimsoll_verify_record(request, response, NULL);
    const char *got = st == PLIMSOLL_STATUS_OK ? "ok" : plimsoll_status_name(st);
    if (streq(got, expect)) {
      passed++;
    } else {
      failed++;
      fprintf(stderr, "FAIL vector %s: got %s, want %s\n", name, got, expect);
    }
    cases++;
  }
  free(line);
  fclose(f);
  CHECK(cases >= 10);
}

/* `s` with every `from` replaced by `to`; the caller frees it. */
static char *replace_all(const char *s, const char *from, const char *to) {
  size_t n = 0, lf = strlen(from), lt = strlen(to);
  for (const char *p = strstr(s, from); p != NULL; p = strstr(p + lf, from)) {
    n++;
  }
  char *out = malloc(strlen(s) + n * lt + 1);
  if (out == NULL) {
    return NULL;
  }
  char *o = out;
  const char *p = s;
  const char *q;
  while ((q = strstr(p, from)) != NULL) {
    memcpy(o, p, (size_t)(q - p));
    o += q - p;
    memcpy(o, to, lt);
    o += lt;
    p = q + lf;
  }
  strcpy(o, p);
  return out;
}

/* The value of the first `"key":"…"` after `after` in `json`, copied into `out`. */
static int json_text_after(const char *json, const char *after, const char *key, char *out,
                           size_t cap) {
  const char *p = after != NULL ? strstr(json, after) : json;
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":\"", key);
  p = p != NULL ? strstr(p, pat) : NULL;
  if (p == NULL) {
    out[0] = '\0';
    return 0;
  }
  p += strlen(pat);
  size_t n = strcspn(p, "\"");
  if (n >= cap) {
    n = cap - 1;
  }
  memcpy(out, p, n);
  out[n] = '\0';
  return 1;
}

/*
 * The shared session calls (tests/vectors/sessions.json, one a line in
 * PLIMSOLL_SESSION_VECTORS_TSV): each is sent through `client`'s session, its
 * want checked, and its line (outcome, request digest, floor sent, rule id)
 * written to `out_path`, which every other language's line must match.
 */
static void test_session_vectors(plimsoll_client *client, const char *tsv, const char *out_path) {
  plimsoll_description *d = NULL;
  char identity[256];
  CHECK_STATUS(plimsoll_client_describe(client, &d, NULL), PLIMSOLL_STATUS_OK);
  CHECK(d != NULL && json_text_after(plimsoll_description_json(d), "\"sessionEnvironment\"",
                                     "softwareIdentity", identity, sizeof identity));
  plimsoll_description_free(d);
  FILE *in = fopen(tsv, "r");
  FILE *out = fopen(out_path, "w");
  CHECK(in != NULL && out != NULL);
  if (in == NULL || out == NULL) {
    return;
  }
  char *line = NULL;
  size_t cap = 0;
  plimsoll_session *s = NULL;
  int calls = 0;
  while (getline(&line, &cap, in) > 0) {
    line[strcspn(line, "\n")] = '\0';
    char *filled = replace_all(line, "$IDENTITY", identity);
    CHECK(filled != NULL);
    if (filled == NULL) {
      break;
    }
    char *name = strtok(filled, "\t");
    char *json = strtok(NULL, "\t");
    if (streq(name, "open")) {
      plimsoll_error *err = NULL;
      CHECK_STATUS(plimsoll_client_open_session(client, json, &s, &err), PLIMSOLL_STATUS_OK);
      if (err != NULL) {
        fprintf(stderr, "open: %s\n", plimsoll_error_message(err));
      }
      plimsoll_error_free(err);
      free(filled);
      continue;
    }
    char *want_outcome = strtok(NULL, "\t");
    char *want_floor = strtok(NULL, "\t");
    char *want_rule = strtok(NULL, "\t");
    CHECK(s != NULL && want_rule != NULL);
    if (s == NULL || want_rule == NULL) {
      free(filled);
      break;
    }
    plimsoll_request *req = NULL;
    plimsoll_response *resp = NULL;
    char floor[32] = "", digest[80] = "", rule[512] = "";
    const char *outcome = "ok";
    CHECK_STATUS(plimsoll_request_from_json(json, &req, NULL), PLIMSOLL_STATUS_OK);
    plimsoll_status st = plimsoll_session_run(s, req, NULL, &resp, NULL);
    if (st == PLIMSOLL_STATUS_OK) {
      json_text_after(field_text(resp, "request_json"), NULL, "minimumIsolation", floor,
                      sizeof floor);
      snprintf(digest, sizeof digest, "%s", field_text(resp, "record.request_sha256"));
      snprintf(rule, sizeof rule, "%s", field_text(resp, "record.software_rule_id"));
    } else {
      outcome = plimsoll_status_name(st);
    }
    CHECK(streq(outcome, want_outcome));
    CHECK(streq(want_floor, "-") || streq(floor, want_floor));
    CHECK(streq(want_rule, "-") || streq(rule, want_rule));
    if (!streq(outcome, want_outcome)) {
      fprintf(stderr, "FAIL session vector %s: %s, want %s\n", name, outcome, want_outcome);
    }
    fprintf(out, "%s\t%s\t%s\t%s\t%s\n", name, outcome, digest, floor, rule);
    plimsoll_response_free(resp);
    plimsoll_request_free(req);
    free(filled);
    calls++;
  }
  CHECK(calls >= 5);
  if (s != NULL) {
    CHECK_STATUS(plimsoll_session_close(s, NULL, NULL), PLIMSOLL_STATUS_OK);
  }
  plimsoll_session_free(s);
  free(line);
  fclose(in);
  fclose(out);
}

static void test_shared_session_calls(const char *tsv, const char *url, const char *token) {
  const char *dir = getenv("PLIMSOLL_SESSION_VECTORS_OUT");
  char path[1024];
  const char *const docker[] = {"SANDBOX_PROVIDER", "docker", "SANDBOX_DOCKER_RUNTIME", "runc",
                                "SANDBOX_MAX_SESSIONS", "2", "SANDBOX_RATE_PER_MIN", "0", NULL};
  plimsoll_status st;
  plimsoll_client *embedded = engine(docker, &st, NULL);
  plimsoll_client *remote = NULL;
  CHECK_STATUS(st, PLIMSOLL_STATUS_OK);
  CHECK(url != NULL && *url != '\0');
  CHECK_STATUS(plimsoll_client_new_remote(url, token, true, &remote, NULL), PLIMSOLL_STATUS_OK);
  snprintf(path, sizeof path, "%s/c-embedded.tsv", dir != NULL && *dir ? dir : "/tmp");
  if (embedded != NULL) {
    test_session_vectors(embedded, tsv, path);
  }
  snprintf(path, sizeof path, "%s/c-remote.tsv", dir != NULL && *dir ? dir : "/tmp");
  if (remote != NULL) {
    test_session_vectors(remote, tsv, path);
  }
  plimsoll_client_free(embedded);
  plimsoll_client_free(remote);
}

int main(void) {
  const char *url = getenv("PLIMSOLL_TEST_URL");
  const char *wasm_url = getenv("PLIMSOLL_TEST_WASM_URL");
  const char *token = getenv("PLIMSOLL_TEST_TOKEN");
  const char *wasm = getenv("PLIMSOLL_TEST_WASM");
  test_version();
  test_status_table();
  test_null_arguments();
  test_config();
  test_requests();
  test_disabled_engine();
  test_threads_disabled();
  test_verify_inputs();
  test_shared_vectors(getenv("PLIMSOLL_VECTORS_TSV"));
  if (wasm != NULL && strcmp(wasm, "0") == 0) {
    fprintf(stderr, "SKIP embedded wasm: PLIMSOLL_TEST_WASM=0\n");
  } else {
    test_wasm_engine(wasm != NULL && strcmp(wasm, "1") == 0);
  }
  if (url != NULL && *url != '\0') {
    test_remote(url, token);
  } else {
    fprintf(stderr, "SKIP remote: PLIMSOLL_TEST_URL is unset\n");
  }
  if (wasm_url != NULL && *wasm_url != '\0') {
    test_wasm_remote(wasm_url, token);
  } else {
    fprintf(stderr, "SKIP remote wasm: PLIMSOLL_TEST_WASM_URL is unset\n");
  }
  const char *sessions = getenv("PLIMSOLL_SESSION_VECTORS_TSV");
  if (sessions != NULL && *sessions != '\0') {
    test_shared_session_calls(sessions, getenv("PLIMSOLL_TEST_SESSIONS_URL"), token);
  } else {
    fprintf(stderr, "SKIP shared session calls: PLIMSOLL_SESSION_VECTORS_TSV is unset (the ASan run sets it)\n");
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
