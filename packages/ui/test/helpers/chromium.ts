// Headless Debian `chromium` driven by puppeteer-core. scripts/test.mjs installs chromium with apt-get before a
// browser test runs; when it is still missing this fails with what to do — a browser test never skips.
import { existsSync } from 'node:fs';
import { type Browser, launch, type Page } from 'puppeteer-core';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];

export function findChromium(): string {
  const fromEnv = process.env['WEFT_CHROMIUM'];
  if (fromEnv !== undefined && fromEnv !== '') {
    if (!existsSync(fromEnv)) throw new Error(`WEFT_CHROMIUM=${fromEnv} does not exist`);
    return fromEnv;
  }
  const found = CANDIDATES.find((path) => existsSync(path));
  if (found === undefined) {
    throw new Error('chromium is missing: `npm test` installs it with apt-get (as root); else run `apt-get install chromium` or set WEFT_CHROMIUM to a Chromium binary');
  }
  return found;
}

export interface Chromium extends AsyncDisposable {
  readonly browser: Browser;
  /** A new page of `width`×`height` CSS pixels. */
  newPage(width?: number, height?: number): Promise<Page>;
  close(): Promise<void>;
}

export async function launchChromium(): Promise<Chromium> {
  const browser = await launch({
    executablePath: findChromium(),
    headless: true,
    // --no-sandbox: the tests run as root, where Chromium's sandbox refuses to start.
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--no-default-browser-check', '--disable-extensions'],
  });
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => (closed ??= browser.close());
  return {
    browser,
    async newPage(width = 1400, height = 1000) {
      const page = await browser.newPage();
      await page.setViewport({ width, height });
      return page;
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}
