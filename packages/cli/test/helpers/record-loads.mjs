// `node --import ./record-loads.mjs`: appends the URL of every module this process loads to the file named
// by $WEFT_TEST_LOADS_FILE, one a line (the loader hook runs on its own thread, so it writes the file itself).
import { register } from 'node:module';

register(
  'data:text/javascript,' +
    encodeURIComponent(`
      import { appendFileSync } from 'node:fs';
      const file = process.env.WEFT_TEST_LOADS_FILE;
      export async function load(url, context, next) {
        appendFileSync(file, url + '\\n');
        return next(url, context);
      }`),
  import.meta.url,
);
