import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';

// The build goes into the Go embed package (internal/console/dist), committed so that
// `go build` needs no Node.js; `make check` rebuilds it and fails on a difference.
export default defineConfig({
  plugins: [react()],
  resolve: {
    alias: { '@sdk': fileURLToPath(new URL('../sdk/typescript/src', import.meta.url)) },
  },
  build: {
    outDir: '../internal/console/dist',
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 1500,
  },
  // `npx vite` serves the sources with the API of a running platform (SHOPMIND_API, default
  // make run's address) behind the same origin.
  server: { proxy: { '/api': { target: process.env.SHOPMIND_API || 'http://127.0.0.1:8080', ws: true } } },
});
