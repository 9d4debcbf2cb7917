import type { SerializedShuffleError, ShuffleDescriptor } from '@weft/shuffle-api';

/**
 * Where an attempt stands. `writing` holds a lease the writer renews; `committed` is the one visible
 * attempt of its partition; every other state is garbage whose object a sweep deletes once the writer
 * is closed or its lease has run out (so a live writer's object is never deleted under it).
 */
export type AttemptState = 'writing' | 'committed' | 'failed' | 'conflicted' | 'abandoned' | 'released';

/** One writer of one partition attempt (a producer may create several writers over time). */
export interface AttemptRecord {
  /** Unique per writer; also part of the object key. */
  readonly writeId: string;
  readonly jobId: string;
  readonly partitionId: string;
  /** The producer execution attempt, `"<vertex>#<subtask>@<attempt>"`. */
  readonly producerId: string;
  readonly objectKey: string;
  readonly state: AttemptState;
  readonly startedAtMs: number;
  /** Last lease renewal, by the metadata store's clock. */
  readonly heartbeatAtMs: number;
  /** Open S3 multipart upload, so a sweep can abort it. */
  readonly uploadId?: string;
  /** Why the producer failed (`failed` attempts), for consumers' SHF_ERR_PRODUCER_FAILED. */
  readonly failure?: SerializedShuffleError;
  /** The writer let go of its object (finished, failed and cleaned, or closed). */
  readonly closed: boolean;
  /** The object was deleted; only `failed` and `abandoned` attempts are kept after that, so consumers learn why. */
  readonly collected: boolean;
}

/** What a committed partition's readers need, and what listPartitions reports. Plain JSON. */
export interface CommitRecord {
  readonly jobId: string;
  readonly partitionId: string;
  readonly writeId: string;
  /** The descriptor the committing writer was created with. */
  readonly descriptor: ShuffleDescriptor;
  readonly objectKey: string;
  readonly objectBytes: number;
  readonly numberOfRegions: number;
  readonly indexOffset: number;
  readonly indexLength: number;
  /** Framed record bytes per subpartition, before compression. */
  readonly subpartitionBytes: readonly number[];
  readonly totalBytes: number;
  /** Bytes of the data blocks as stored (after compression). */
  readonly storedBytes: number;
  readonly committedAtMs: number;
}

export type CommitOutcome =
  | { readonly status: 'committed' }
  /** Another writer committed first. This attempt is now `conflicted`. */
  | { readonly status: 'conflict'; readonly winner: string }
  /** The partition is not registered (never, or released). This attempt is now `released`. */
  | { readonly status: 'not-registered' }
  /** This attempt is no longer `writing` (its lease ran out and a sweep took it, or it failed). */
  | { readonly status: 'fenced'; readonly state: AttemptState | 'missing' }
  /** The partition was registered again for another producer attempt (or epoch): `current` is its producer. This attempt is now `conflicted`. */
  | { readonly status: 'superseded'; readonly current: string }
  /** The partition was registered under job master `epoch`, and `newestEpoch` registered in the job since. This attempt is now `conflicted`. */
  | { readonly status: 'epoch-fenced'; readonly epoch: number; readonly newestEpoch: number };

export type RegisterOutcome =
  /** Registered; `released` holds what a replaced registration of another attempt left to collect (nothing when none was replaced). */
  | { readonly status: 'registered'; readonly released: ReleasedAttempts }
  /** Refused: the job saw `newestEpoch`, newer than the registration's. Nothing changed. */
  | { readonly status: 'fenced'; readonly newestEpoch: number };

/** Refused: the job saw `newestEpoch`, newer than the caller's epoch. Nothing changed. */
export interface EpochFenced {
  readonly status: 'fenced';
  readonly newestEpoch: number;
}

/** What registering a job did: registered (its newest epoch raised to the caller's, when given), or fenced. */
export type RegisterJobOutcome = { readonly status: 'registered' } | EpochFenced;

/** What a release did: released (what it left to collect), or fenced — then nothing was released. */
export type ReleaseOutcome = ({ readonly status: 'released' } & ReleasedAttempts) | EpochFenced;

export interface PartitionRegistration {
  readonly jobId: string;
  readonly partitionId: string;
  /** BLOCKING_PERSISTENT: survives unregisterJob. */
  readonly persistent: boolean;
  /** Its descriptor; `details.epoch` holds the job master epoch it was registered under, if any. */
  readonly descriptor: ShuffleDescriptor;
  /** The job master run's epoch (RegisterPartitionRequest.epoch); refused when older than the job's newest. */
  readonly epoch?: number;
}

/** The job master epoch a descriptor of this shuffle was registered under (`details.epoch`), if any. */
export function descriptorEpoch(descriptor: ShuffleDescriptor): number | undefined {
  const details = descriptor.details as { epoch?: unknown } | null;
  return typeof details?.epoch === 'number' ? details.epoch : undefined;
}

/**
 * True when two descriptors of one partition name the same registration: the same producer attempt under
 * the same epoch. Registering a partition again for the same one is idempotent; any other replaces it.
 */
export function sameRegistration(a: ShuffleDescriptor, b: ShuffleDescriptor): boolean {
  return a.producer.producerId === b.producer.producerId && descriptorEpoch(a) === descriptorEpoch(b);
}

/** All a reader needs to resolve a partition. */
export interface PartitionLookup {
  readonly registered: boolean;
  readonly commit: CommitRecord | undefined;
  /** The partition's attempts not yet forgotten. */
  readonly attempts: readonly AttemptRecord[];
  /** The store's clock now, to judge leases. */
  readonly nowMs: number;
}

/** What a release left to collect, and the store's clock when it did, to judge their leases. */
export interface ReleasedAttempts {
  readonly attempts: readonly AttemptRecord[];
  /** The store's clock (Redis: the server's; SQLite: the store's Clock), the one leases are renewed by. */
  readonly nowMs: number;
}

export interface BeginAttemptRequest {
  readonly writeId: string;
  readonly jobId: string;
  readonly partitionId: string;
  readonly producerId: string;
  readonly objectKey: string;
}

/**
 * Partition metadata shared by masters, producers and consumers, possibly in several processes
 * (Redis: several machines). Every visibility decision is one atomic operation here: an attempt's data is
 * visible once `commit` says `committed`, and the first writer of the partition's current registration to
 * commit wins. A registration for another producer attempt (or epoch) replaces the current one in the same
 * atomic step: its commit disappears and its attempts become `released`, so an older attempt can never
 * commit afterwards. The newest job master epoch seen per job is kept with the job (and outlives it): a
 * registration under an older epoch is refused, and so is the commit of a partition registered under one.
 *
 * Errors: SHF_ERR_INVALID_CONFIG from `start()` for a store that cannot be reached or opened;
 * SHF_ERR_STORAGE_UNAVAILABLE (retryable) for a store that stops answering later. Every operation is
 * idempotent (`commit` by the same writer included), so callers may retry it.
 *
 * Not in the contract: the layout of keys or tables; clock source (Redis uses its server's clock, SQLite the
 * local one).
 */
export interface MetadataStore {
  /** The store, for logs and errors, without secrets. */
  readonly description: string;
  start(): Promise<void>;
  close(): Promise<void>;

  /**
   * Registers the job. With `epoch` (the job master run's), first raises the job's newest epoch to it, in
   * the same atomic step — refused (`fenced`, nothing changed) when the job saw a newer one — so every
   * older master's release and registration is refused from then on.
   */
  registerJob(jobId: string, epoch?: number): Promise<RegisterJobOutcome>;
  /**
   * Registers a partition. Again for the same producer attempt and epoch: idempotent, an existing commit
   * stays. For another one: replaces the registration (see above). Refused for an epoch older than the job's newest.
   */
  registerPartition(registration: PartitionRegistration): Promise<RegisterOutcome>;
  /** Records a new `writing` attempt with a fresh lease; `not-registered` if the partition is not registered. */
  beginAttempt(request: BeginAttemptRequest): Promise<'ok' | 'not-registered'>;
  /** Renews the lease (and records the upload id); returns the attempt's state, `missing` once forgotten. */
  heartbeat(writeId: string, uploadId?: string): Promise<AttemptState | 'missing'>;
  /** `writing` → `failed`, keeping `failure` for consumers. */
  failAttempt(writeId: string, failure: SerializedShuffleError): Promise<void>;
  /** The writer will not touch its object again; a garbage attempt's object may be deleted at once. */
  closeAttempt(writeId: string): Promise<void>;
  /** Makes `commit.writeId`'s data the partition's, if it is first. */
  commit(commit: CommitRecord): Promise<CommitOutcome>;

  lookupPartition(jobId: string, partitionId: string): Promise<PartitionLookup>;
  /** Committed partitions of a job (any order). */
  listCommitted(jobId: string): Promise<CommitRecord[]>;
  /**
   * Unregisters the partition: its commit disappears, every attempt becomes `released`. Returns them.
   * With `epoch` (the releasing master's): `fenced`, releasing nothing, when the job saw a newer epoch —
   * the check and the removal of the commit are one atomic step.
   */
  releasePartition(jobId: string, partitionId: string, epoch?: number): Promise<ReleaseOutcome>;
  /**
   * Releases every partition of the job (but persistent ones when `keepPersistent`) and forgets the job; the
   * attempts it returns include those of partitions released before whose objects may remain (a writer
   * killed mid-write keeps its lease), so the job's end deletes them too. With `epoch`: fenced as
   * `releasePartition` is (each partition's release checks it atomically; once one is fenced, nothing
   * more is released).
   */
  releaseJob(jobId: string, keepPersistent: boolean, epoch?: number): Promise<ReleaseOutcome>;
  /**
   * Marks `writing` attempts whose lease is older than `leaseMs` `abandoned`, then returns up to `limit`
   * garbage attempts whose object may be deleted now (closed, or lease older than `leaseMs`).
   */
  collectGarbage(leaseMs: number, limit: number): Promise<AttemptRecord[]>;
  /** The object of a garbage attempt is deleted: forget it (a `failed` or `abandoned` one is kept, marked collected, until its partition is released). */
  forgetAttempt(writeId: string): Promise<void>;
}

/**
 * True when a garbage attempt's object may be deleted: its writer let go, or its lease ran out. `nowMs`
 * must come from the store's clock (`PartitionLookup.nowMs`, `ReleasedAttempts.nowMs`), the clock
 * leases are renewed by, never from the caller's.
 */
export function isCollectible(attempt: AttemptRecord, nowMs: number, leaseMs: number): boolean {
  if (attempt.collected || attempt.state === 'writing' || attempt.state === 'committed') return false;
  return attempt.closed || nowMs - attempt.heartbeatAtMs > leaseMs;
}
