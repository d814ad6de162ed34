export * from './agent-client';
