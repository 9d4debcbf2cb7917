import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts', main: 'src/main.ts', 'faults/index': 'src/faults/index.ts' },
  format: ['esm'],
  dts: { entry: { index: 'src/index.ts', 'faults/index': 'src/faults/index.ts' } },
  sourcemap: true,
  clean: true,
  target: 'node20',
  external: [/^node:/, /^@weft\//],
});
