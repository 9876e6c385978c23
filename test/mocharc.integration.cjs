module.exports = {
  'node-option': ['import=tsx'],
  spec: ['test/integration/**/*.test.ts'],
  timeout: 120000,
  reporter: 'spec',
};
