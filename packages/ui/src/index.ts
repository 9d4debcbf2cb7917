export * from './api/ui-api.js';
