import { type ShuffleDescriptor, invalidArgument } from '@weft/shuffle-api';

/** What a network shuffle descriptor's `details` carry: where the producer's environment listens. */
export interface NetworkDescriptorDetails {
  readonly host: string;
  readonly port: number;
}

/** The producer's address from a descriptor's details; SHF_ERR_INVALID_ARGUMENT naming `<field>.details`. */
export function readDetails(descriptor: ShuffleDescriptor, field: string): NetworkDescriptorDetails {
  const details = descriptor.details as Record<string, unknown> | null;
  if (typeof details !== 'object' || details === null || Array.isArray(details)) {
    throw invalidArgument(`${field}.details`, 'expected {host, port} of the producer');
  }
  const { host, port } = details;
  if (typeof host !== 'string' || host === '') throw invalidArgument(`${field}.details.host`, `expected a host, got ${JSON.stringify(host)}`);
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65_535) {
    throw invalidArgument(`${field}.details.port`, `expected a port, got ${JSON.stringify(port)}`);
  }
  return { host, port };
}
