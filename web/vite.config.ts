import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

/**
 * The dashboard single-page app. `vite build web` writes static files to web/dist, which the server
 * serves at `/`; `vite web` is a dev server that proxies the APIs to a local `bin/tollgate demo`.
 */
export default defineConfig({
  plugins: [react()],
  base: '/',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // Every asset is a file of its own: the page's Content-Security-Policy allows only 'self'.
    assetsInlineLimit: 0,
    chunkSizeWarningLimit: 1000,
  },
  server: {
    proxy: {
      '/dashboard/api': 'http://127.0.0.1:8080',
      '/api': 'http://127.0.0.1:8080',
    },
  },
});
