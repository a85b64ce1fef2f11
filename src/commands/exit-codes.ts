/**
 * The exit codes of every command, one table (README, "Connect to your vendor", repeats it). A command
 * returns one of these; only src/entry/ sets the process's exit code from it.
 *
 * | code | meaning |
 * | ---- | ------- |
 * | 0    | ok: `run` after a graceful drain; `wait`, `status` ready; `healthcheck` live; doctor's steps passed |
 * | 1    | not ok: cannot start, not ready (`status`, `wait` after `--timeout`), unhealthy, a doctor step failed, `token` refused |
 * | 2    | invalid configuration or usage: every problem listed by key |
 * | 3    | cannot reach the running sidecar's admin listener, or what answers there is not it (`status`) |
 * | 130  | a second signal: exited without waiting |
 */
export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;
/** The admin listener could not be reached: nothing listens, a refusal, no answer in time. */
export const EXIT_UNREACHABLE = 3;
/** Returned after a second signal: the entry point exits at once instead of waiting. */
export const EXIT_INTERRUPTED = 130;
