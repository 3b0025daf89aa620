/* cli/options.c: what every command's option reading shares: getopt_long with the CLI's rules
 * (cli_getopt_next: words in order, full option names only, no glued values), strict integers,
 * numbers and comma-separated lists, and the library's error text printed. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

void cli_getopt_init(cli_getopt *G, int argc, char **argv, const char *shortopts,
                     const struct option *longopts)
{
    *G = (cli_getopt){.argc = argc, .argv = argv, .shortopts = shortopts, .longopts = longopts};
    optind = 0;
    opterr = 0;
}

/* The table row that the long option word ("--name", or "--name=..." unless no_equals) names in
 * full, or NULL. */
static const struct option *long_named(const cli_getopt *G, const char *word)
{
    const char *name = word + 2, *eq = strchr(name, '=');
    size_t n = eq ? (size_t)(eq - name) : strlen(name);
    if (eq && G->no_equals) return NULL;
    for (const struct option *p = G->longopts; p->name; p++)
        if (strlen(p->name) == n && strncmp(p->name, name, n) == 0) return p;
    return NULL;
}

int cli_getopt_next(cli_getopt *G)
{
    G->at = optind > 0 ? optind : 1;  /* in order, getopt reads the word at optind */
    G->word = G->at < G->argc ? G->argv[G->at] : NULL;
    int c = getopt_long(G->argc, G->argv, G->shortopts, G->longopts, NULL);
    /* Read in order, getopt stops before the end only at "--", which is no option here. */
    if (c == -1) return G->word ? '?' : -1;
    if (c == 1 || c == '?') return c;
    /* A word that names the option in full is the one getopt matched: it prefers an exact name. */
    if (strncmp(G->word, "--", 2) == 0) return long_named(G, G->word) ? c : '?';
    return strlen(G->word) == 2 ? c : '?';  /* "-o" alone: never "-oFILE" or a cluster */
}

int cli_parse_int(const char *s, const char *name, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        cli_error("%s: '%s' is not an integer in [%ld, %ld]", name, s, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int cli_parse_num(const char *s, const char *name, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi) {
        cli_error("%s: '%s' is not a number in [%g, %g]", name, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* Splits a comma-separated list in place (s is owned by argv). */
int cli_split_list(char *s, const char **out, int cap, const char *name)
{
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == cap) {
            cli_error("%s: at most %d values", name, cap);
            return -1;
        }
        out[n++] = tok;
    }
    if (n == 0) cli_error("%s: empty list", name);
    return n ? n : -1;
}

int cli_list_value(char *v, const char *name, const char **out, int *n)
{
    int k = cli_split_list(v, out + *n, CLI_MAX_LIST - *n, name);
    if (k < 0) return -1;
    *n += k;
    return 0;
}

void cli_print_errbuf(const char *err, const char *fallback)
{
    cli_error("%s", err && *err ? err : fallback);
}
