import { randomUUID } from 'node:crypto';
import { link, mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { ShuffleError, invalidConfig } from '@weft/shuffle-api';

/** What a lock file says about the process holding it (one JSON object). */
export interface DirectoryLockHolder {
  readonly pid: number;
  readonly hostname: string;
  readonly startedAtMs: number;
  /** Unique to one acquisition: tells this lock from an earlier one of the same pid (a restarted container's pid 1). */
  readonly token: string;
}

/** The lock file, in the directory it locks. */
export const DIRECTORY_LOCK_FILE = '.lock';
/** Held for the few milliseconds it takes to replace a stale lock, so only one starter replaces it. */
const TAKEOVER_FILE = '.lock.takeover';
/** How long a start-up keeps trying while another process is taking over a stale lock. */
const TAKEOVER_WAIT_MS = 5_000;

/** The tokens this process holds or is taking, shared by every copy of this module loaded in the process. */
function ownTokens(): Set<string> {
  const key = Symbol.for('weft.shuffle-server.directory-lock.tokens');
  const global = globalThis as { [key]?: Set<string> };
  global[key] ??= new Set();
  return global[key];
}

function isErrno(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code;
}

/**
 * A shuffle server's exclusive hold on its directory (Kafka's and Celeborn's `.lock`): a lock file
 * `<dir>/.lock` naming the holder's pid, hostname and start time. `acquire` creates it atomically
 * (written aside, then hard-linked into place, so it is never seen half written) or refuses with
 * `SHF_ERR_DIR_LOCKED`; `release` removes it. The server takes it before anything else reads or writes the
 * directory and gives it back last on a graceful close.
 *
 * Node has no flock, so a holder that dies (SIGKILL, a crash) leaves its file behind. Such a lock is stale
 * when it names this host and a pid that no longer runs (`process.kill(pid, 0)` fails with ESRCH, or, on
 * Linux, /proc shows a zombie nobody collected yet), or this process's own pid with a token it does not
 * hold (a restarted container's process often gets the same pid). A stale lock is replaced by renaming a new file over it, under `<dir>/.lock.takeover`, created
 * exclusively, so of two starters racing for one stale lock exactly one wins and the other finds it live.
 * A lock naming another host is never taken over: its process cannot be checked from here.
 *
 * Not covered: a pid reused by an unrelated live process keeps the lock refused (remove the file); a
 * starter killed inside a takeover leaves `.lock.takeover` behind, cleared by the next starter once its
 * pid is gone (two starters clearing it at that very moment could both take over).
 */
export class DirectoryLock implements AsyncDisposable {
  /** The lock file. */
  readonly path: string;
  #released: Promise<void> | undefined;

  private constructor(
    /** The locked directory (absolute). */
    readonly dir: string,
    readonly holder: DirectoryLockHolder,
  ) {
    this.path = join(dir, DIRECTORY_LOCK_FILE);
  }

  /** Locks `dir` (created when missing) for this process, or throws SHF_ERR_DIR_LOCKED naming the holder. */
  static async acquire(dir: string): Promise<DirectoryLock> {
    const root = resolve(dir);
    try {
      await mkdir(root, { recursive: true });
    } catch (cause) {
      throw invalidConfig('dir', `cannot create ${root}: ${(cause as Error).message}`, cause);
    }
    const me: DirectoryLockHolder = { pid: process.pid, hostname: hostname(), startedAtMs: Date.now(), token: randomUUID() };
    // counted as held from before the file exists: another start-up in this process that reads it then
    // must not take it for a stale lock of an earlier process with this pid
    ownTokens().add(me.token);
    try {
      await take(root, me);
    } catch (error) {
      ownTokens().delete(me.token);
      throw error;
    }
    return new DirectoryLock(root, me);
  }

  /** Removes the lock file if it is still this lock's. Idempotent and memoised. */
  release(): Promise<void> {
    this.#released ??= this.#release();
    return this.#released;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }

  async #release(): Promise<void> {
    try {
      const current = await readHolder(this.path);
      if (current !== 'gone' && current?.token === this.holder.token) await unlink(this.path);
    } catch (error) {
      if (!isErrno(error, 'ENOENT')) throw error;
    } finally {
      ownTokens().delete(this.holder.token);
    }
  }
}

/** Creates the lock file for `me`, taking over a stale one; throws SHF_ERR_DIR_LOCKED when it is held. */
async function take(root: string, me: DirectoryLockHolder): Promise<void> {
  const lockPath = join(root, DIRECTORY_LOCK_FILE);
  const aside = join(root, `${DIRECTORY_LOCK_FILE}.${me.token}.tmp`);
  try {
    await writeFile(aside, `${JSON.stringify(me)}\n`, { flag: 'wx' });
  } catch (cause) {
    throw invalidConfig('dir', `cannot write the lock file in ${root}: ${(cause as Error).message}`, cause);
  }
  try {
    const deadline = Date.now() + TAKEOVER_WAIT_MS;
    for (;;) {
      if (await linkExclusive(aside, lockPath, root)) return;
      const holder = await readHolder(lockPath);
      if (holder === 'gone') continue; // released meanwhile: create it again
      if (holder === undefined || !(await isStale(holder))) throw dirLocked(root, lockPath, holder);
      if (await takeOver(root, holder, aside)) return;
      // another starter is replacing it: the next look finds its lock, live, or the stale one again
      if (Date.now() > deadline) throw dirLocked(root, lockPath, holder);
      await new Promise((r) => setTimeout(r, 10 + Math.random() * 40));
    }
  } finally {
    await unlink(aside).catch(() => undefined); // gone already when it was renamed over a stale lock
  }
}

/**
 * Replaces the stale lock `stale` with the file `aside`, holding the takeover file meanwhile. False when it
 * did not: another starter is taking over (or took over) first.
 */
async function takeOver(root: string, stale: DirectoryLockHolder, aside: string): Promise<boolean> {
  const lockPath = join(root, DIRECTORY_LOCK_FILE);
  const guardPath = join(root, TAKEOVER_FILE);
  if (!(await linkExclusive(aside, guardPath, root))) {
    const taker = await readHolder(guardPath);
    // its starter was killed in the middle of a takeover: clear the way for the next try
    if (taker !== 'gone' && taker !== undefined && (await isStale(taker))) await unlink(guardPath).catch(() => undefined);
    return false;
  }
  try {
    // still the lock judged stale? (another starter may have replaced it between our read and the guard)
    const current = await readHolder(lockPath);
    if (current === 'gone' || current?.token !== stale.token) return false;
    await rename(aside, lockPath);
    return true;
  } catch (cause) {
    throw invalidConfig('dir', `cannot replace the stale lock file ${lockPath}: ${(cause as Error).message}`, cause);
  } finally {
    await unlink(guardPath).catch(() => undefined);
  }
}

/** Hard-links `from` to `to`: true when it did, false when `to` exists. */
async function linkExclusive(from: string, to: string, root: string): Promise<boolean> {
  try {
    await link(from, to);
    return true;
  } catch (cause) {
    if (isErrno(cause, 'EEXIST')) return false;
    throw invalidConfig('dir', `cannot create the lock file ${to} in ${root}: ${(cause as Error).message}`, cause);
  }
}

/** The holder a lock file names; undefined when it does not parse, 'gone' when there is no file. */
async function readHolder(path: string): Promise<DirectoryLockHolder | undefined | 'gone'> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (cause) {
    if (isErrno(cause, 'ENOENT')) return 'gone';
    throw invalidConfig('dir', `cannot read the lock file ${path}: ${(cause as Error).message}`, cause);
  }
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== 'object' || value === null) return undefined;
    const { pid, hostname: host, startedAtMs, token } = value as Record<string, unknown>;
    // a pid of 0 or below would signal a process group
    if (!Number.isSafeInteger(pid) || (pid as number) <= 0 || typeof host !== 'string' || typeof token !== 'string' || typeof startedAtMs !== 'number') return undefined;
    return { pid: pid as number, hostname: host, startedAtMs, token };
  } catch {
    return undefined;
  }
}

/** True when the holder is certainly gone: it ran on this host, and its pid does not (or is ours, under a token we do not hold). */
async function isStale(holder: DirectoryLockHolder): Promise<boolean> {
  if (holder.hostname !== hostname()) return false;
  if (holder.pid === process.pid) return !ownTokens().has(holder.token);
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    return isErrno(error, 'ESRCH'); // EPERM: it runs, as another user
  }
  return isZombie(holder.pid);
}

/**
 * A killed process whose parent has not collected it yet (a supervisor that does not wait, a container
 * whose pid 1 reaps nothing) still answers kill(pid, 0); on Linux /proc tells it is dead (state Z or X).
 */
async function isZombie(pid: number): Promise<boolean> {
  if (process.platform !== 'linux') return false;
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3); // after "pid (comm) "
    return state === 'Z' || state === 'X';
  } catch {
    return false;
  }
}

function dirLocked(root: string, lockPath: string, holder: DirectoryLockHolder | undefined): ShuffleError {
  const since = new Date(holder?.startedAtMs ?? Number.NaN);
  const who =
    holder === undefined
      ? `a lock file that names no readable holder (${lockPath})`
      : `another shuffle server (pid ${holder.pid} on host ${holder.hostname}${Number.isNaN(since.getTime()) ? '' : `, since ${since.toISOString()}`})`;
  return new ShuffleError(
    'SHF_ERR_DIR_LOCKED',
    `the directory ${root} is held by ${who}: stop that server, or, if that process is really gone, remove ${lockPath} and start again`,
    {
      context: {
        setting: 'dir',
        dir: root,
        lockFile: lockPath,
        ...(holder === undefined ? {} : { holderPid: holder.pid, holderHostname: holder.hostname, holderStartedAtMs: holder.startedAtMs }),
      },
    },
  );
}
