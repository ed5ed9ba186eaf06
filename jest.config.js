/** Tests run against real PostgreSQL and Redis; each file gets its own schema and queue prefix. */
module.exports = {
  testEnvironment: 'node',
  transform: { '^.+\\.(t|j)s$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }] },
  testMatch: ['<rootDir>/test/**/*.test.ts', '<rootDir>/packages/*/src/**/*.test.ts', '<rootDir>/services/*/src/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/'],
  transformIgnorePatterns: ['/node_modules/'],
  testTimeout: 60000,
  maxWorkers: 2,
  globalSetup: '<rootDir>/test/global-setup.ts',
};
