/** The app's entry (app/src/main.ts), its page (app/index.html) and where `npm run build` writes them. */
export declare const APP_ENTRY: string;
export declare const APP_INDEX_HTML: string;
export declare const APP_DIST: string;

export interface BundleAppOptions {
  /** @defaultValue true */
  readonly minify?: boolean;
  /** An inline source map. @defaultValue true */
  readonly sourcemap?: boolean;
}

/** The app bundled in memory: `index.html` and `main.js` (served as `/` and `/app/main.js`). */
export declare function bundleApp(options?: BundleAppOptions): Promise<{ 'index.html': string; 'main.js': string }>;
