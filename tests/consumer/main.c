/* A program outside the strobe tree, built against an installed strobe. */
#include <stdio.h>
#include <strobe/strobe.h>

int main(int argc, char **argv) {
    strobe_config cfg;
    strobe_config_init(&cfg);
    if (strobe_start(&cfg) != 0) return 1;
    { STROBE_SCOPE("consumer"); }
    strobe_result *r = NULL;
    if (strobe_stop(&r) != 0) return 1;
    int rc = argc > 1 ? strobe_result_save(r, argv[1]) : 0;
    size_t n = strobe_result_event_count(r);
    strobe_result_free(r);
    printf("strobe %s: %zu event(s)\n", strobe_version(), n);
    return rc == 0 && n == 1 ? 0 : 1;
}
