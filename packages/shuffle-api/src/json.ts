import { invalidArgument } from './shuffle-error.js';

/** A value that survives `JSON.stringify` / `JSON.parse` unchanged: what crosses process boundaries. */
export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { readonly [key: string]: JsonValue };
export type JsonObject = { readonly [key: string]: JsonValue };

/** Deepest nesting `validateJsonValue` accepts (deeper values are refused, not walked). */
export const MAX_JSON_DEPTH = 256;

/**
 * Checks that `value` is a JsonValue that survives `JSON.parse(JSON.stringify(value))` unchanged: null,
 * booleans, finite numbers, strings, arrays and plain objects of those, without cycles. Refuses
 * `undefined`, functions, symbols, BigInt, NaN and ±Infinity, class instances (Date, Map, Uint8Array, ...)
 * and values nested deeper than MAX_JSON_DEPTH, with SHF_ERR_INVALID_ARGUMENT naming `field` (and, in the
 * message, the path inside it).
 */
export function validateJsonValue(field: string, value: unknown): JsonValue {
  const ancestors = new Set<object>();
  const visit = (node: unknown, path: string, depth: number): void => {
    switch (typeof node) {
      case 'string':
      case 'boolean':
        return;
      case 'number':
        if (!Number.isFinite(node)) throw invalidArgument(field, `${path} is ${node}, which JSON cannot carry`);
        return;
      case 'object':
        break;
      default:
        throw invalidArgument(field, `${path} is ${typeof node === 'bigint' ? 'a BigInt' : typeof node === 'undefined' ? 'undefined' : `a ${typeof node}`}, which JSON cannot carry`);
    }
    if (node === null) return;
    if (depth >= MAX_JSON_DEPTH) throw invalidArgument(field, `${path} is nested deeper than ${MAX_JSON_DEPTH} levels`);
    if (ancestors.has(node)) throw invalidArgument(field, `${path} refers back to itself (a cycle), which JSON cannot carry`);
    ancestors.add(node);
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) visit(node[i], `${path}[${i}]`, depth + 1);
    } else {
      const proto: unknown = Object.getPrototypeOf(node);
      if (proto !== Object.prototype && proto !== null) {
        const name = (node as { constructor?: { name?: unknown } }).constructor?.name;
        throw invalidArgument(field, `${path} is a ${typeof name === 'string' ? name : 'class instance'}, not a plain object`);
      }
      if (Object.getOwnPropertySymbols(node).length > 0) throw invalidArgument(field, `${path} has symbol keys, which JSON drops`);
      for (const [key, child] of Object.entries(node)) visit(child, `${path}.${key}`, depth + 1);
    }
    ancestors.delete(node);
  };
  visit(value, field, 0);
  return value as JsonValue;
}
