// Specs run through SWC in CommonJS; the NestJS 12 packages ship as ESM, so they are
// transformed too (see MACHINE-NOTES: stock ts-jest cannot load them).
const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
    },
    module: { type: 'commonjs' },
    sourceMaps: 'inline',
  },
];

const common = {
  transform: { '^.+\\.(t|j|mj)s$': swc },
  // @kubernetes/client-node 2.x and some of its dependencies are ESM-only as well.
  transformIgnorePatterns: [
    '/node_modules/(?!(@nestjs|file-type|uid|@octokit|standardwebhooks|@kubernetes|jsonpath-plus|openid-client|oauth4webapi|jose|rfc4648|socks-proxy-agent|agent-base)/)',
  ],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'json'],
  // Export maps with an `import` condition only (no `require`): point Jest at the file.
  moduleNameMapper: {
    '^@octokit/webhooks-methods$': '<rootDir>/node_modules/@octokit/webhooks-methods/dist-node/index.js',
  },
  testEnvironment: 'node',
};

module.exports = {
  // A global setting only: Jest ignores it inside a project.
  testTimeout: 60000,
  globalSetup: '<rootDir>/test/harness/global-setup.ts',
  globalTeardown: '<rootDir>/test/harness/global-teardown.ts',
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/src/**/*.spec.ts'] },
    {
      ...common,
      displayName: 'packages',
      testMatch: ['<rootDir>/packages/*/src/**/*.spec.ts'],
      // Workspace packages are ESM source: their relative imports name the emitted `.js` file.
      moduleNameMapper: { ...common.moduleNameMapper, '^(\\.{1,2}/.*)\\.js$': '$1' },
    },
    // Repositories against the real PostgreSQL with the real migrations, no HTTP in between.
    { ...common, displayName: 'medium', testMatch: ['<rootDir>/test/medium/**/*.medium-spec.ts'] },
    {
      ...common,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
    },
  ],
};
