/** A value that survives `JSON.stringify` / `JSON.parse` unchanged: what crosses process boundaries. */
export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { readonly [key: string]: JsonValue };
export type JsonObject = { readonly [key: string]: JsonValue };
