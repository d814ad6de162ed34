export * from './agent-client.js';
export * from './install-skills.js';
export * from './safe-unzip.js';
