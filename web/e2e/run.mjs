// The console's browser tests: Debian's chromium driven by playwright-core (never a browser
// download) against a running platform whose address and accounts the caller gives in the
// environment (tests/web starts one with demo data on random ports and runs this file):
//   SHOPMIND_URL, SHOPMIND_PASSWORD (the demo admin's), SHOPMIND_EMPTY_TENANT (a tenant without
//   data, same admin password), SHOPMIND_TOKEN_TTL (the access token lifetime, seconds),
//   CHROMIUM (default: chromium on the PATH).
// Every flow runs in English and in Chinese (the browser's language picks it); screenshots of
// every page go to e2e/out (git-ignored), axe checks every page, and the budgets measured are
// written to e2e/out/budgets.json. Exits 1 with the failures listed.
import { chromium } from 'playwright-core';
import { AxeBuilder } from '@axe-core/playwright';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import assert from 'node:assert/strict';

const base = process.env.SHOPMIND_URL;
const password = process.env.SHOPMIND_PASSWORD;
const emptyTenant = process.env.SHOPMIND_EMPTY_TENANT;
const ttl = Number(process.env.SHOPMIND_TOKEN_TTL || '0');
if (!base || !password || !emptyTenant) {
  console.error('SHOPMIND_URL, SHOPMIND_PASSWORD and SHOPMIND_EMPTY_TENANT are required');
  process.exit(2);
}
const out = new URL('./out/', import.meta.url).pathname;
mkdirSync(out, { recursive: true });
const executablePath = process.env.CHROMIUM || execFileSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).trim();

const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});

const failures = [];
const budgets = {};
const only = process.env.E2E_ONLY ? new RegExp(process.env.E2E_ONLY) : null;

async function step(name, fn) {
  if (only && !only.test(name)) return;
  const t0 = Date.now();
  try {
    await fn();
    console.log(`ok   ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    failures.push(`${name}: ${e?.stack || e}`);
    console.log(`FAIL ${name}: ${String(e?.message || e).split('\n')[0]}`);
  }
}

async function api(path, body, token) {
  const r = await fetch(base + path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return r.json();
}
const adminToken = async () => (await api('/api/v1/tenant/auth/login', { tenant_code: 'demo', username: 'admin', password })).data.access_token;

async function newPage(lang) {
  const context = await browser.newContext({ locale: lang === 'zh' ? 'zh-CN' : 'en-US', viewport: { width: 1366, height: 860 } });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  page.on('pageerror', (e) => console.log(`  page error (${lang}): ${e.message}`));
  page.on('console', (m) => m.type() === 'error' && console.log(`  console error (${lang}): ${m.text().slice(0, 300)}`));
  return { context, page };
}

async function axe(page, name) {
  await page.mouse.move(1, 1); // no hover colours in the measure
  await page.waitForTimeout(300); // antd's colour transitions end
  const r = await new AxeBuilder({ page }).analyze();
  const bad = r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.equal(bad.length, 0, `axe on ${name}: ${bad.map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join('; ')}`).join(' | ')}`);
}

async function shot(page, name) {
  await page.screenshot({ path: `${out}${name}.png`, fullPage: false });
}

async function signIn(page, tenant, user = 'admin', pw = password) {
  await page.goto(base + '/login');
  await page.locator('#tenant').fill(tenant);
  await page.locator('#username').fill(user);
  await page.locator('#password').fill(pw);
  await page.locator('button[type=submit]').click();
}

// go navigates inside the application (no reload), as the menus do: a reload while a token
// refresh is in flight would lose the rotated refresh token.
async function go(page, path) {
  await page.evaluate((p) => {
    history.pushState({}, '', p);
    dispatchEvent(new PopStateEvent('popstate'));
  }, path);
}

async function signedIn(page) {
  await page.waitForURL(/\/chat/);
  await page.getByTestId('whoami').waitFor();
}

const T = {
  en: { signIn: 'Sign in', signOut: 'Sign out', rename: 'Rename', delete: 'Delete', save: 'Save', execute: 'Execute', run: 'Run', workflowPanel: 'Run as a workflow', newMetric: 'New metric', home: 'Home', ask: (m) => `${m} by shop last 7 days` },
  zh: { signIn: '登录', signOut: '退出登录', rename: '重命名', delete: '删除', save: '保存', execute: '执行', run: '查询', workflowPanel: '以工作流运行', newMetric: '新建指标', home: '首页', ask: (m) => `最近7天各店铺的${m}` },
};

for (const lang of ['en', 'zh']) {
  const L = T[lang];

  await step(`${lang}: sign-in page in the browser's language, first paint and JS budget, axe`, async () => {
    const { context, page } = await newPage(lang);
    const scripts = [];
    page.on('response', async (r) => {
      if (r.request().resourceType() === 'script') scripts.push(r.body().then((b) => gzipSync(b).length).catch(() => 0));
    });
    await page.goto(base + '/');
    await page.waitForURL(/\/login$/);
    await page.getByRole('button', { name: L.signIn }).waitFor();
    const fcp = await page.evaluate(() => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1);
    await page.waitForLoadState('networkidle');
    const js = (await Promise.all(scripts)).reduce((a, b) => a + b, 0);
    budgets[`${lang}.signin_fcp_ms`] = Math.round(fcp);
    budgets[`${lang}.first_page_js_gzip_kb`] = Math.round(js / 1024);
    assert.ok(fcp > 0, 'first contentful paint recorded');
    assert.equal(await page.evaluate(() => document.documentElement.lang), lang === 'zh' ? 'zh-CN' : 'en');
    await shot(page, `${lang}-signin`);
    await axe(page, 'sign-in');
    await context.close();
  });

  await step(`${lang}: wrong password refused, captcha after repeated failures`, async () => {
    const { context, page } = await newPage(lang);
    await signIn(page, 'demo', 'admin', 'wrong-password');
    await page.getByRole('alert').filter({ hasText: /./ }).waitFor();
    assert.match(page.url(), /\/login$/);
    // failures are counted for unknown names too: a name of its own per language
    const who = `nobody-${lang}`;
    for (let i = 0; i < 3; i++) {
      await signIn(page, 'demo', who, 'wrong');
      await page.getByRole('alert').waitFor();
    }
    await signIn(page, 'demo', who, 'wrong');
    const img = page.getByTestId('captcha-image');
    await img.waitFor();
    assert.match(await img.getAttribute('src'), /^data:image\/png;base64,/);
    await shot(page, `${lang}-signin-captcha`);
    await axe(page, 'sign-in with captcha');
    const before = await img.getAttribute('src');
    await page.getByLabel(/Captcha|验证码/).first().fill('00000');
    await page.locator('button[type=submit]').click();
    await page.waitForFunction((b) => document.querySelector('[data-testid=captcha-image]')?.getAttribute('src') !== b, before);
    assert.match(page.url(), /\/login$/);
    await context.close();
  });

  await step(`${lang}: chat answers with thinking, plan card and a drawn chart; rename and delete the conversation`, async () => {
    const { context, page } = await newPage(lang);
    await page.addInitScript(() => {
      // the answer's text painted (Element Timing: the console marks the live answer's paragraphs)
      window.__painted = [];
      new PerformanceObserver((l) => l.getEntries().forEach((e) => e.identifier === 'shopmind-answer' && window.__painted.push(e.renderTime || e.loadTime))).observe({ type: 'element', buffered: true });
    });
    await signIn(page, 'demo');
    await signedIn(page);
    await page.getByTestId('messages').waitFor();
    await shot(page, `${lang}-chat-empty`);
    await axe(page, 'chat');
    const input = page.getByTestId('composer').locator('textarea').first();
    await input.fill(L.ask('GMV'));
    await input.press('Enter');
    await page.getByTestId('thinking').first().waitFor();
    await page.getByTestId('plan-card').first().waitFor();
    await page.getByTestId('answer').first().waitFor();
    const canvas = page.locator('[data-testid=chart] canvas').first();
    await canvas.waitFor();
    await page.waitForURL(/\/chat\/[0-9a-f-]{36}/);
    await input.waitFor({ state: 'visible' });
    await page.waitForFunction(() => !document.querySelector('[data-testid=composer] textarea')?.disabled);
    const painted = await canvas.evaluate((c) => {
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && (d[i] < 240 || d[i + 1] < 240 || d[i + 2] < 240)) n++;
      return n;
    });
    assert.ok(painted > 500, `chart canvas has ${painted} painted pixels`);
    // the thinking block folded when the answer started
    assert.equal(await page.locator('[data-testid=thinking] .ant-collapse-item-active').count(), 0, 'thinking block folded');
    // the console's marks: the first text's bytes returned by the body's reader, the text in
    // the DOM (React's commit); the paint of its text as Element Timing reports it
    const lat = await page.evaluate(() => {
      const at = (n) => performance.getEntriesByName(`shopmind:first-token-${n}`).at(-1)?.startTime ?? NaN;
      const r = at('received');
      return { drawn: Math.min(...window.__painted) - r, committed: at('committed') - r };
    });
    assert.ok(lat.drawn >= 0 && lat.committed >= 0, `first-token marks: ${JSON.stringify(lat)}`);
    budgets[`${lang}.chat_first_token_commit_ms`] = Math.round(lat.committed * 10) / 10;
    budgets[`${lang}.chat_first_token_draw_ms`] = Math.round(lat.drawn * 10) / 10;
    await shot(page, `${lang}-chat-answer`);
    await axe(page, 'chat with an answer');

    // table view and CSV of the chart
    const viz = page.getByTestId('visualization').first();
    await viz.getByText(lang === 'zh' ? '表格' : 'Table', { exact: true }).click();
    await viz.locator('table').waitFor();
    const [dl] = await Promise.all([page.waitForEvent('download'), viz.getByRole('button', { name: /CSV/ }).click()]);
    assert.match(dl.suggestedFilename(), /\.csv$/);

    // rename
    const item = page.locator('.ant-conversations-item').first();
    await item.hover();
    await item.locator('.ant-conversations-menu-icon').click();
    await page.getByRole('menuitem', { name: L.rename }).click();
    const title = (lang === 'zh' ? '改名的会话 ' : 'Renamed conversation ') + (Date.now() % 100000);
    await page.getByRole('dialog').locator('input').fill(title);
    await page.getByRole('dialog').getByRole('button', { name: L.save }).click();
    await page.getByTestId('conversations').getByText(title).waitFor();
    // search
    await page.getByPlaceholder(/Search|搜索/).fill('zzz-no-such');
    await page.getByTestId('conversations').getByText(title).waitFor({ state: 'detached' });
    await page.getByPlaceholder(/Search|搜索/).fill('');
    // delete
    const it2 = page.locator('.ant-conversations-item', { hasText: title });
    await it2.hover();
    await it2.locator('.ant-conversations-menu-icon').click();
    await page.getByRole('menuitem', { name: L.delete }).click();
    await page.locator('.ant-modal-confirm').getByRole('button', { name: L.delete }).click();
    await page.getByTestId('conversations').getByText(title).waitFor({ state: 'detached' });
    await context.close();
  });

  await step(`${lang}: a workflow started from the chat drawn live over the WebSocket channel; the socket dropped, resumed from its offset`, async () => {
    const { context, page } = await newPage(lang);
    await page.addInitScript(() => {
      // Every WebSocket the page opens, the frames it sends and receives; the first socket is
      // closed by the page itself right after it delivered its second step event (a dropped
      // connection, as a network loss would close it): no frame is delivered after close().
      const Orig = window.WebSocket;
      window.__ws = [];
      window.WebSocket = class extends Orig {
        constructor(...a) {
          super(...a);
          const rec = { sent: [], events: [], stepsDrawnAtOpen: document.querySelectorAll('[data-testid=workflow-steps] .ant-steps-item').length, closedByTest: false };
          window.__ws.push(rec);
          this.rec = rec;
          this.n = window.__ws.length;
          this.steps = 0;
        }
        set onmessage(h) {
          // the console's handler first, then the record (and the drop, synchronously: the
          // event was processed, nothing after it is)
          super.onmessage = (m) => {
            h(m);
            const f = JSON.parse(String(m.data));
            if (f.type !== 'event') return;
            this.rec.events.push(f.offset);
            if (f.data?.type === 'step' && ++this.steps === 2 && this.n === 1) {
              this.rec.closedByTest = true;
              this.close(4001, 'dropped by the test');
            }
          };
        }
        get onmessage() {
          return super.onmessage;
        }
        send(d) {
          this.rec.sent.push(JSON.parse(d));
          super.send(d);
        }
      };
    });
    await signIn(page, 'demo');
    await signedIn(page);
    const token = await page.evaluate(() => JSON.parse(sessionStorage.getItem('shopmind.session')).access);
    const conv = await api('/api/v1/sessions', {}, token);
    assert.equal(conv.code, 0, JSON.stringify(conv));
    await go(page, `/chat/${conv.data.conversation_id}`);
    await page.getByText(L.workflowPanel, { exact: true }).click();
    const wf = page.getByTestId('workflow');
    await wf.locator('input').fill(L.ask('GMV'));
    const [started] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/api/v1/chat/workflows') && r.request().method() === 'POST'),
      wf.getByRole('button', { name: L.run }).click(),
    ]);
    const wid = (await started.json()).data.workflow_id;
    await page.waitForFunction(() => ['completed', 'failed'].includes(document.querySelector('[data-testid=workflow-status]')?.dataset.status), null, { timeout: 60_000 });
    await page.waitForTimeout(400); // the progress bar's transition ends
    await shot(page, `${lang}-chat-workflow`);
    const w = (await api(`/api/v1/chat/workflows/${wid}`, undefined, token)).data;
    assert.equal(w.status, 'completed', JSON.stringify(w).slice(0, 500));
    const socks = await page.evaluate(() => window.__ws);
    // the first socket was dropped mid-stream, after steps were drawn; the console reconnected
    assert.ok(socks.length >= 2, `${socks.length} sockets`);
    assert.ok(socks[0].closedByTest, 'the first socket was dropped mid-stream');
    assert.ok(socks[1].stepsDrawnAtOpen > 0, 'steps were drawn live, before the reconnect');
    // the second subscribed from the last offset the first delivered, and got exactly what followed
    const last = socks[0].events.at(-1);
    assert.deepEqual(socks[1].sent[0], { type: 'subscribe', topic: `workflow:${wid}`, offset: last });
    const all = socks.flatMap((x) => x.events);
    const want = Array.from({ length: Number(w.last_sequence) }, (_, i) => i + 1);
    assert.deepEqual(all, want, 'every event once, in order, across the reconnect');
    // every step drawn once, with its final status
    const drawn = await wf.locator('[data-testid=workflow-steps] .ant-steps-item').evaluateAll((xs) =>
      xs.map((x) => ({ title: x.querySelector('.ant-steps-item-title')?.textContent, finished: x.classList.contains('ant-steps-item-finish') })),
    );
    assert.ok(w.steps.length > 0, 'the workflow has steps');
    assert.deepEqual(drawn, w.steps.map((s) => ({ title: s.description || s.id, finished: s.status === 'completed' })));
    assert.equal(await wf.getByRole('progressbar').getAttribute('aria-valuenow'), '100');
    await axe(page, 'chat with a workflow');
    await context.close();
  });

  await step(`${lang}: explorer preview equals the API's numbers; metric created, invalid one refused on its field`, async () => {
    const { context, page } = await newPage(lang);
    await signIn(page, 'demo');
    await signedIn(page);
    await go(page, '/explorer?metric=gmv');
    await page.getByRole('button', { name: L.run }).waitFor();
    const [req] = await Promise.all([page.waitForRequest((r) => r.url().endsWith('/api/v1/anls/query/preview')), page.getByRole('button', { name: L.run }).click()]);
    await page.getByTestId('explorer-table').locator('tbody tr.ant-table-row').first().waitFor();
    await page.locator('[data-testid=chart] canvas').first().waitFor();
    const fromApi = await api('/api/v1/anls/query/preview', JSON.parse(req.postData()), await adminToken());
    assert.equal(fromApi.code, 0, JSON.stringify(fromApi));
    const cells = await page.getByTestId('explorer-table').locator('tbody tr.ant-table-row').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    const expected = fromApi.data.rows.slice(0, cells.length).map((r) => r.map((v) => (v === null ? '' : String(v))));
    assert.ok(expected.length > 0, 'the API has rows');
    assert.deepEqual(cells, expected);
    await page.getByRole('button', { name: /View SQL|查看 SQL/ }).click();
    await page.getByTestId('generated-sql').waitFor();
    await shot(page, `${lang}-explorer`);
    await axe(page, 'explorer');

    // create a metric
    const name = `e2e_${lang}_${Date.now() % 100000}`;
    await page.getByRole('button', { name: L.newMetric }).click();
    const form = page.getByTestId('metric-form');
    await form.locator('#name').fill(name);
    await form.locator('#display_name').fill(`E2E ${lang}`);
    await form.locator('#group').fill('E2E');
    await shot(page, `${lang}-metric-form`);
    await page.getByRole('dialog').getByRole('button', { name: L.save }).click();
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    await page.getByTestId(`metric-${name}`).waitFor();
    // an invalid one: the API's refusal lands on the name field
    await page.getByRole('button', { name: L.newMetric }).click();
    await form.locator('#name').fill('Bad Name!');
    await form.locator('#display_name').fill('Bad');
    await form.locator('#group').fill('E2E');
    await page.getByRole('dialog').getByRole('button', { name: L.save }).click();
    const err = form.locator('#name_help');
    await err.waitFor();
    assert.match(await err.textContent(), /name/);
    await shot(page, `${lang}-metric-invalid`);
    await context.close();
  });

  await step(`${lang}: SQL lab runs a query and refuses a write; home page`, async () => {
    const { context, page } = await newPage(lang);
    await signIn(page, 'demo');
    await signedIn(page);
    await go(page, '/sql');
    const editor = page.getByTestId('sql-editor');
    await editor.fill('SELECT 1 AS one');
    await page.getByRole('button', { name: L.execute }).click();
    await page.getByTestId('sql-grid').locator('tbody tr.ant-table-row').first().waitFor();
    await editor.fill('DELETE FROM orders');
    await page.getByRole('button', { name: L.execute }).click();
    const refusal = page.getByTestId('sql-refusal');
    await refusal.waitFor();
    await shot(page, `${lang}-sql-refused`);
    await axe(page, 'SQL lab');
    await go(page, '/home');
    await page.locator('[data-testid^=kpi-]').first().waitFor();
    await page.locator('[data-testid=chart] canvas').first().waitFor();
    await page.waitForLoadState('networkidle');
    await shot(page, `${lang}-home`);
    await axe(page, 'home');
    await context.close();
  });

  await step(`${lang}: token refreshed across expiry, then sign-out`, async () => {
    const { context, page } = await newPage(lang);
    let refreshes = 0;
    page.on('response', (r) => {
      if (r.url().endsWith('/auth/refresh') && r.status() === 200) refreshes++;
    });
    await signIn(page, 'demo');
    await signedIn(page);
    const first = await page.evaluate(() => JSON.parse(sessionStorage.getItem('shopmind.session')).access);
    // wait past the first token's expiry: the console refreshes before it
    await page.waitForTimeout((ttl + 1) * 1000);
    await go(page, '/home');
    await go(page, '/chat');
    await page.getByTestId('conversations').waitFor();
    await page.getByTestId('whoami').waitFor();
    const now = await page.evaluate(() => JSON.parse(sessionStorage.getItem('shopmind.session'))?.access);
    assert.ok(now && now !== first, 'a new access token');
    assert.ok(refreshes >= 1, 'refreshed');
    assert.equal(await page.getByRole('alert').count(), 0);
    await page.getByRole('button', { name: L.signOut }).click();
    await page.waitForURL(/\/login$/);
    assert.equal(await page.evaluate(() => sessionStorage.getItem('shopmind.session')), null);
    await context.close();
  });

  await step(`${lang}: an empty tenant's pages`, async () => {
    const { context, page } = await newPage(lang);
    await signIn(page, emptyTenant);
    await signedIn(page);
    await shot(page, `${lang}-empty-chat`);
    const heading = { home: { en: 'Home', zh: '首页' }, explorer: { en: 'Metric explorer', zh: '指标探索' }, sql: { en: 'SQL lab', zh: 'SQL 实验室' } };
    for (const p of ['home', 'explorer', 'sql']) {
      await go(page, `/${p}`);
      await page.getByRole('heading', { level: 2, name: heading[p][lang] }).waitFor(); // the route's chunk is in
      await page.waitForLoadState('networkidle');
      await shot(page, `${lang}-empty-${p}`);
      await axe(page, `empty tenant ${p}`);
    }
    await context.close();
  });
}

await step('paths: API paths never answer the page, unknown paths do', async () => {
  for (const p of ['/api/v1/nope', '/tenant/api/v1/nope', '/analysis/api/v1/nope']) {
    const r = await fetch(base + p);
    assert.match(r.headers.get('content-type') || '', /json/, p);
  }
  const r = await fetch(base + '/some/deep/link');
  assert.equal(r.status, 200);
  assert.match(await r.text(), /<div id="root">/);
});

await browser.close();
writeFileSync(`${out}budgets.json`, JSON.stringify(budgets, null, 2) + '\n');
console.log('budgets', JSON.stringify(budgets));
if (failures.length) {
  console.error(`\n${failures.length} failed:\n` + failures.join('\n\n'));
  process.exit(1);
}
