/**
 * A real browser for the dashboard's tests: Debian's chromium (/usr/bin/chromium, or
 * GRIDSTEER_CHROMIUM) driven by playwright-core, headless, with the flags that keep it off the
 * network (this machine's network is closed; without them chromium tries Google's hosts at
 * every start); playwright gives it a fresh profile. Screenshots go to test-artifacts/<suite>/ at the repository root (kept after
 * the run, ignored by git). A missing chromium fails the suite with what to install.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { repoRoot } from './paths.js';

export const CHROMIUM = process.env.GRIDSTEER_CHROMIUM ?? '/usr/bin/chromium';

export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-quic',
  '--no-first-run',
  '--disable-component-update',
  '--disable-sync',
];

export interface TestBrowser {
  browser: Browser;
  /** A new page (its own context: its own sessionStorage, so its own token). */
  page(): Promise<Page>;
  /** Saves a full-page screenshot as test-artifacts/<suite>/<name>.png; returns the path. */
  shot(page: Page, name: string): Promise<string>;
  close(): Promise<void>;
}

export async function launchBrowser(suite: string): Promise<TestBrowser> {
  if (!existsSync(CHROMIUM)) throw new Error(`browser: ${CHROMIUM} does not exist: install the Debian package chromium (apt-get install chromium), or set GRIDSTEER_CHROMIUM`);
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS, timeout: 60_000 });
  const dir = join(repoRoot, 'test-artifacts', suite);
  mkdirSync(dir, { recursive: true });
  return {
    browser,
    async page() {
      const ctx = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
      const p = await ctx.newPage();
      p.setDefaultTimeout(20_000);
      return p;
    },
    async shot(page, name) {
      const path = join(dir, `${name}.png`);
      // A full-page capture stretches the viewport to the page for a moment; Chromium then
      // reports the stretched scroll offset until the next focus change scrolls back, and a
      // click in between lands beside its target. Put the scroll offset back explicitly.
      type Win = { scrollX: number; scrollY: number; scrollTo(x: number, y: number): void };
      const at = await page.evaluate(() => [(globalThis as unknown as Win).scrollX, (globalThis as unknown as Win).scrollY] as const);
      await page.screenshot({ path, fullPage: true });
      await page.evaluate(([x, y]) => (globalThis as unknown as Win).scrollTo(x, y), at);
      return path;
    },
    async close() {
      await browser.close().catch(() => undefined);
    },
  };
}
