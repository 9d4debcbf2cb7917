export * from './api/ui-api.js';
export * from './server/index.js';
