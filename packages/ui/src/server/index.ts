export * from './fold-job-events.js';
export * from './job-view.js';
