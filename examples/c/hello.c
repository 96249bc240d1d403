/* plimsoll from C: run a JavaScript snippet on the embedded wasm engine, or
 * on a plimsolld when PLIMSOLL_URL is set (with PLIMSOLL_TOKEN), and print its
 * output and the isolation tier it ran behind.
 *
 *   cc hello.c $(pkg-config --cflags --libs plimsoll) -o hello && ./hello
 *   PLIMSOLL_URL=http://127.0.0.1:8080 PLIMSOLL_TOKEN=… ./hello
 */
#include <plimsoll.h>
#include <stdio.h>
#include <stdlib.h>

static int fail(const char *what, plimsoll_error *e) {
  fprintf(stderr, "%s: %s\n", what, plimsoll_error_message(e));
  plimsoll_error_free(e);
  return 1;
}

int main(void) {
  plimsoll_error *e = NULL;
  plimsoll_client *client = NULL;
  const char *url = getenv("PLIMSOLL_URL");
  if (url != NULL) {
    if (plimsoll_client_new_remote(url, getenv("PLIMSOLL_TOKEN"), false, &client, &e) != PLIMSOLL_STATUS_OK)
      return fail("remote", e);
  } else {
    plimsoll_config *config = NULL;
    if (plimsoll_config_new(&config, &e) != PLIMSOLL_STATUS_OK ||
        plimsoll_config_set(config, "SANDBOX_PROVIDER", "wasm", &e) != PLIMSOLL_STATUS_OK)
      return fail("config", e);
    plimsoll_status s = plimsoll_client_new_engine(config, &client, &e);
    plimsoll_config_free(config);
    if (s != PLIMSOLL_STATUS_OK)
      return fail("engine", e);
  }

  plimsoll_request *request = NULL;
  plimsoll_response *response = NULL;
  if (plimsoll_request_new_javascript("console.log(6 * 7)", &request, &e) != PLIMSOLL_STATUS_OK)
    return fail("request", e);
  plimsoll_status s = plimsoll_client_run(client, request, NULL, &response, &e);
  plimsoll_request_free(request);
  if (s != PLIMSOLL_STATUS_OK) {
    plimsoll_client_free(client);
    return fail("run", e);
  }

  plimsoll_value out = {0}, tier = {0};
  plimsoll_response_get(response, "stdout", &out, NULL);
  plimsoll_response_get(response, "isolation", &tier, NULL);
  printf("%.*s", (int)out.bytes.len, (const char *)out.bytes.data);
  printf("isolation: %s\n", tier.text);
  plimsoll_response_free(response);
  plimsoll_client_free(client);
  return 0;
}
