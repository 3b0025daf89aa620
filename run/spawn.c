/* run/spawn.c: the runner subprocesses of `calibrate run` (posix_spawn, then wait). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/run.h"

extern char **environ;

int pp_run_spawn(char *const argv[], char *errbuf, size_t errbuf_len)
{
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0) {
        snprintf(errbuf, errbuf_len, "cannot start %s: out of memory", argv[0]);
        return -1;
    }
    int rc = posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    pid_t pid = -1;
    if (rc == 0) rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        snprintf(errbuf, errbuf_len, "cannot start %s: %s", argv[0], strerror(rc));
        return -1;
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) {
            snprintf(errbuf, errbuf_len, "waiting for %s: %s", argv[0], strerror(errno));
            return -1;
        }
    }
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return -1;
}
