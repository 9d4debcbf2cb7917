import { isEngineError } from '@weft/engine';
import type { ClusterExecutorProvider } from '@weft/cluster';
import type { CliIo } from '../command.js';
import { integerFlag, usageError } from '../parse-command-args.js';
import { readSecret } from '../read-secret.js';
import { stderrLogger } from '../stderr-logger.js';
import { isShuffleConfigError, type Setting, settingProblem } from './run-settings.js';

/**
 * `--cluster` (or $WEFT_CLUSTER): the cluster's task executors as the job's executor provider. The
 * blocking shuffle must be one every host reaches (S3 + Redis, or a shuffle-server pool).
 */
export async function clusterProvider(request: {
  values: { cluster?: string | undefined; 'cluster-startup-timeout'?: string | undefined; 'secret-file'?: string | undefined; executor?: string | undefined; workers?: string | undefined };
  servers: Setting | undefined;
  store: Setting;
  meta: Setting;
  io: CliIo;
}): Promise<ClusterExecutorProvider | undefined> {
  const { values, servers, store, meta, io } = request;
  const url = values.cluster ?? (io.env['WEFT_CLUSTER'] === '' ? undefined : io.env['WEFT_CLUSTER']);
  const timeout = integerFlag('run', '--cluster-startup-timeout', values['cluster-startup-timeout'], 1);
  if (url === undefined) {
    if (timeout !== undefined) throw usageError('run', '--cluster-startup-timeout needs --cluster');
    return undefined;
  }
  if (values.executor !== undefined || values.workers !== undefined) throw usageError('run', `--cluster cannot be combined with ${values.executor !== undefined ? '--executor' : '--workers'}: the cluster's task executors run the job`);
  if (servers === undefined && !(store.value.startsWith('s3://') && meta.value.startsWith('redis'))) {
    throw usageError('run', `--cluster needs a blocking shuffle every host reaches: --store s3://… with --meta redis://…, or --shuffle-servers (got ${store.source} ${store.value.startsWith('s3://') ? 's3' : 'local'}, ${meta.source} ${meta.value.split(':')[0]})`);
  }
  const secret = await readSecret('run', values['secret-file'], io);
  const { ClusterExecutorProvider } = await import('@weft/cluster');
  try {
    return new ClusterExecutorProvider({ cluster: url, secret, ...(timeout === undefined ? {} : { startupTimeoutMs: timeout }), logger: stderrLogger(io, false) });
  } catch (error) {
    if (isShuffleConfigError(error) || isEngineError(error, 'WEFT_ERR_INVALID_ARGUMENT')) throw usageError('run', settingProblem('--cluster', error), error);
    throw error;
  }
}
