// Builds the extension: esbuild bundles the TypeScript entry points (minified) into
// ../internal/crxbundle/dist with the hand-written manifest.json and the static files; the
// platform embeds that folder and serves it as a zip (internal/crxbundle). The zip for
// loading by hand goes to out/. SHOPMIND_EXTENSION_SERVER sets the server address the popup
// proposes (default: the production address below).
import { build } from "esbuild";
import { zipSync } from "fflate";
import { cpSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";

const DEFAULT_SERVER = process.env.SHOPMIND_EXTENSION_SERVER || "https://shopmind.example.com";
const dist = new URL("../internal/crxbundle/dist/", import.meta.url).pathname;
const out = new URL("./out/", import.meta.url).pathname;
const manifest = JSON.parse(readFileSync("manifest.json", "utf8"));

rmSync(dist, { recursive: true, force: true });
mkdirSync(dist, { recursive: true });
await build({
  entryPoints: { background: "src/background.ts", content: "src/content.ts", "page-hook": "src/page-hook.ts", popup: "src/popup.ts" },
  outdir: dist,
  bundle: true,
  minify: true,
  format: "iife",
  target: "chrome116",
  legalComments: "none",
  define: { __DEFAULT_SERVER__: JSON.stringify(DEFAULT_SERVER) },
  logLevel: "warning",
});
cpSync("manifest.json", join(dist, "manifest.json"));
cpSync("static", dist, { recursive: true });

const files = {};
const walk = (dir) => {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else files[relative(dist, p)] = [readFileSync(p), { mtime: new Date("2000-01-01T00:00:00Z") }];
  }
};
walk(dist);
mkdirSync(out, { recursive: true });
const zipName = `shopmind-extension-${manifest.version}.zip`;
writeFileSync(join(out, zipName), zipSync(files, { level: 9 }));
const sw = statSync(join(dist, "background.js")).size;
console.log(`built ${Object.keys(files).length} files into internal/crxbundle/dist and out/${zipName}; service worker ${sw} bytes`);
if (sw > 100 * 1024) { console.error("the service worker exceeds 100 KB minified"); process.exit(1); }
