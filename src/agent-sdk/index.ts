export * from './agent-client';
export * from './install-skills';
export * from './safe-unzip';
