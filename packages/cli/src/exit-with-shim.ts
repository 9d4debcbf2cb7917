/** How often a process started by bin/weft.js checks that the shim is still its parent. */
const SHIM_POLL_MS = 500;

/**
 * bin/weft.js (the shim) runs this process as its child and passes signals on; a SIGKILL of the shim
 * cannot be passed on, and would leave this process — a job master and its workers — running unseen.
 * When `shimPid` is set and stops being this process's parent, this writes one line to `stderr` and
 * exits 137 (as the SIGKILL its user sent); the workers then see their job master vanish and stop too.
 * The timer never keeps the process alive.
 */
export function exitWithShim(shimPid: string | undefined, stderr: NodeJS.WritableStream): void {
  if (shimPid === undefined || Number(shimPid) !== process.ppid) return;
  const timer = setInterval(() => {
    if (process.ppid === Number(shimPid)) return;
    clearInterval(timer);
    stderr.write(`weft: the weft command (pid ${shimPid}) that started this process is gone; stopping\n`);
    process.exit(137);
  }, SHIM_POLL_MS);
  timer.unref();
}
