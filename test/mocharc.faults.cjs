module.exports = {
  'node-option': ['import=tsx'],
  spec: ['test/faults/**/*.test.ts'],
  timeout: 600000,
  reporter: 'spec',
};
