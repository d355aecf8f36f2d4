import { h } from '../dom.ts';

/**
 * The sender's (already sanitised) HTML in an iframe of its own:
 * - `sandbox` without allow-scripts: nothing in it runs, whatever slipped through; no forms, no
 *   top navigation. allow-same-origin (safe without allow-scripts) only lets this page measure its
 *   height; links open in a new tab (allow-popups) as ordinary pages.
 * - srcdoc inherits the page's Content-Security-Policy, and the document adds its own, stricter one:
 *   images only from inside the message (data:) until the reader asks for the sender's images from
 *   the internet (https: only; a remote image tells the sender when and where the mail was read).
 */
export function messageFrame(html: string, options: { title: string; remoteImages: boolean }): HTMLIFrameElement {
  const frame = h('iframe', {
    class: 'body-frame',
    title: options.title,
    sandbox: 'allow-same-origin allow-popups allow-popups-to-escape-sandbox',
    referrerpolicy: 'no-referrer',
  });
  const css = document.querySelector<HTMLMetaElement>('meta[name="reader-frame-css"]')?.content;
  const imageSources = options.remoteImages ? 'data: https:' : 'data:';
  const policy = `default-src 'none'; style-src 'self'; img-src ${imageSources}; form-action 'none'`;
  frame.srcdoc = [
    '<!doctype html><html><head><meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${policy}">`,
    '<meta name="referrer" content="no-referrer">',
    '<base target="_blank">',
    css ? `<link rel="stylesheet" href="${css.replace(/[^A-Za-z0-9/._-]/g, '')}">` : '',
    `</head><body>${html}</body></html>`,
  ].join('');

  const fit = () => {
    const root = frame.contentDocument?.documentElement;
    if (root) frame.style.height = `${Math.max(root.scrollHeight, 40)}px`;
  };
  frame.addEventListener('load', () => {
    fit();
    const root = frame.contentDocument?.documentElement;
    // Late images and a narrower window change the height: follow it.
    if (root && 'ResizeObserver' in window) new ResizeObserver(fit).observe(root);
    for (const image of Array.from(frame.contentDocument?.images ?? [])) image.addEventListener('load', fit);
  });
  return frame;
}
