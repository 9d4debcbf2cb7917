import { invalidEngineArgument } from '../errors/engine-error.js';
import type { JobPlan } from '../graph/job-plan.js';
import { type StreamConnector, type StreamConnectorReference, streamConnectorOf } from '../io/stream-connector.js';

/**
 * Refuses, before anything runs, a job with an external stream source (`ctx.readRedisStream`) on executors
 * outside the job master's process when the connector serving its URL has no `reference`: a worker
 * process or a cluster executor could not rebuild it, so the source would fail there once started. A URL
 * no connector serves is left to the source, which fails with WEFT_ERR_SOURCE_UNAVAILABLE as in process.
 */
export function checkStreamSourcesReachable(plan: JobPlan, executorKind: string, connectors: readonly StreamConnector[]): void {
  if (executorKind === 'inprocess') return;
  for (const vertex of plan.vertices) {
    const head = vertex.operators[0]?.node;
    if (head?.spec.kind !== 'stream-source') continue;
    const connector = streamConnectorOf(head.spec.url, connectors);
    if (connector === undefined || connector.reference !== undefined) continue;
    throw invalidEngineArgument(
      `streamConnectors[${connectors.indexOf(connector)}]`,
      `source ${JSON.stringify(head.name)} (ctx.readRedisStream) reads through a stream connector without a reference (StreamConnector.reference), so ${executorKind} executors cannot rebuild it; give it one, or run the job in process`,
    );
  }
}

/** The references of the connectors that have one, for executors outside the job master's process (the others serve in process only). */
export function streamConnectorReferences(connectors: readonly StreamConnector[] | undefined): StreamConnectorReference[] {
  return (connectors ?? []).flatMap((c) => (c.reference === undefined ? [] : [c.reference]));
}
