export * from './fold-job-events.js';
export * from './job-view.js';
export * from './ui-server.js';
export * from './ui-server-options.js';
export * from './ui-token.js';
export * from './ui-api-errors.js';
export * from './app-assets.js';
export * from './prometheus-text.js';
