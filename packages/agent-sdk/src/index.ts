export * from './agent-client.js';
