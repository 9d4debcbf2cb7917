import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** The numbers a server's gauges read when scraped. */
export interface ServerGaugeSource {
  readonly activeStreams: number;
  readonly partitions: number;
  readonly diskUsedBytes: number;
  readonly tierTransfersActive: number;
  readonly tierTransfersWaiting: number;
}

/**
 * A server's Prometheus metrics (prom-client), in a registry of its own so several servers in one process
 * do not collide. Counters are bumped per chunk, not per record; gauges are read at scrape time.
 */
export class ServerMetrics {
  readonly registry = new Registry();
  readonly bytesIn: Counter;
  readonly bytesOut: Counter;
  readonly requestDuration: Histogram<'route' | 'status'>;
  readonly errors: Counter<'wire'>;
  readonly uploadsDiscarded: Counter<'reason'>;

  constructor(source: ServerGaugeSource) {
    const registers = [this.registry];
    this.bytesIn = new Counter({ name: 'weft_shuffle_server_bytes_in_total', help: 'Bytes received in push bodies', registers });
    this.bytesOut = new Counter({ name: 'weft_shuffle_server_bytes_out_total', help: 'Bytes sent in fetch bodies', registers });
    new Gauge({
      name: 'weft_shuffle_server_active_streams',
      help: 'Pushes and fetches in progress',
      registers,
      collect() {
        this.set(source.activeStreams);
      },
    });
    new Gauge({
      name: 'weft_shuffle_server_partitions',
      help: 'Committed partitions on this server',
      registers,
      collect() {
        this.set(source.partitions);
      },
    });
    new Gauge({
      name: 'weft_shuffle_server_disk_used_bytes',
      help: 'Bytes of partition data on disk, uploads in progress included',
      registers,
      collect() {
        this.set(source.diskUsedBytes);
      },
    });
    new Gauge({
      name: 'weft_shuffle_server_tier_transfers',
      help: 'S3 tier transfers (write-through parts, commit copies) by state: active (holding one of tier.maxTransfers) or waiting',
      labelNames: ['state'],
      registers,
      collect() {
        this.set({ state: 'active' }, source.tierTransfersActive);
        this.set({ state: 'waiting' }, source.tierTransfersWaiting);
      },
    });
    this.requestDuration = new Histogram({
      name: 'weft_shuffle_server_request_duration_seconds',
      help: 'Time from request start to the end of its response, by route and HTTP status',
      labelNames: ['route', 'status'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    this.errors = new Counter({ name: 'weft_shuffle_server_errors_total', help: 'Error responses by wire error number', labelNames: ['wire'], registers });
    this.uploadsDiscarded = new Counter({
      name: 'weft_shuffle_server_uploads_discarded_total',
      help: 'Pushes whose partial data was deleted, by reason',
      labelNames: ['reason'],
      registers,
    });
  }

  async text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
