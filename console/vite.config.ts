import preact from '@preact/preset-vite';
import { defineConfig } from 'vite';

// Built into dist/console and served by the controller at /console/ (no dev server in production).
export default defineConfig({
  root: __dirname,
  base: '/console/',
  plugins: [preact()],
  build: {
    outDir: '../dist/console',
    emptyOutDir: true,
    // The strict Content-Security-Policy allows no inline script: keep every script a file.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
  },
});
