const FENCED_CODES = new Set(['WEFT_ERR_FENCED', 'SHF_ERR_FENCED']);
const MAX_CAUSE_DEPTH = 16;

/**
 * The first WEFT_ERR_FENCED / SHF_ERR_FENCED in `error`'s cause chain, if any — a store's refusal saying a
 * newer job master run took the job over — with the newest epoch it names.
 */
export function findFencingRefusal(error: unknown): { readonly error: Error; readonly newestEpoch: number | undefined } | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < MAX_CAUSE_DEPTH && current !== undefined && current !== null; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && FENCED_CODES.has(code)) {
      const newest = (current as { context?: { newestEpoch?: unknown } }).context?.newestEpoch;
      return { error: current as Error, newestEpoch: typeof newest === 'number' ? newest : undefined };
    }
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}
