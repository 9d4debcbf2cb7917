import { spawnSync } from 'node:child_process';

function has(command: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

/**
 * The path of `promtool` (Debian's `prometheus` package), installed with apt-get when it is missing and this
 * process may (root), as scripts/test.mjs installs redis-server. Throws a clear message when it cannot — a
 * metrics test never passes without checking.
 */
export function ensurePromtool(): string {
  if (has('promtool')) return 'promtool';
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!root || !has('apt-get')) throw new Error('promtool is missing and cannot be installed here: apt-get install prometheus (it brings promtool), then rerun');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = (): number | null => spawnSync('apt-get', ['install', '-y', '-q', '--no-install-recommends', 'prometheus'], { env, stdio: 'ignore' }).status;
  if (install() !== 0) {
    spawnSync('apt-get', ['update', '-q'], { env, stdio: 'ignore' });
    if (install() !== 0) throw new Error('promtool is missing and apt-get install prometheus failed: install it by hand and rerun');
  }
  if (!has('promtool')) throw new Error('apt-get installed prometheus but promtool is not on PATH');
  return 'promtool';
}

/** `promtool check metrics` on `text`: its problems (empty when it is clean). */
export function promtoolProblems(text: string): string {
  const result = spawnSync(ensurePromtool(), ['check', 'metrics'], { input: text, encoding: 'utf8' });
  return result.status === 0 ? '' : `${result.stdout}${result.stderr}`.trim() || `promtool exited ${result.status}`;
}
