/**
 * Signals that arrive before a command has installed its own handlers (docs/security.md, "The
 * process"). Installed first by dist/cli.js (launcher.ts), before any module of a command loads:
 * - SIGUSR1 opens Node's inspector, an unauthenticated debugger on 127.0.0.1:9229 that reads the
 *   password and runs code as the sidecar, unless the process has a listener of its own (or node
 *   runs with --disable-sigusr1, as the release's launchers, the unit and the image do). Ours
 *   says it was ignored, once a command's logger has not taken it over.
 * - SIGHUP's default action ends the process (exit 129, which systemd does not restart). A
 *   serving command re-reads its credential files on SIGHUP once it has started; before that it
 *   reads them at start anyway, so an early SIGHUP is ignored.
 */
export function holdEarlySignals(serving: boolean, stderr: { write(text: string): unknown }): void {
  process.on('SIGUSR1', () => {
    // A command that logs installed its own listener: it says so in its log instead.
    if (process.listenerCount('SIGUSR1') > 1) return;
    stderr.write('warning: SIGUSR1 ignored: it would open Node\'s inspector, which hands out the credentials (docs/security.md)\n');
  });
  if (serving) process.on('SIGHUP', () => undefined);
}
