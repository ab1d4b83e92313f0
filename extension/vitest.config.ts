import { defineConfig } from "vitest/config";

export default defineConfig({
  define: { __DEFAULT_SERVER__: JSON.stringify("http://server") },
  test: { include: ["unit/**/*.test.ts"] },
});
