// The page imports its style sheets for their side effect: esbuild bundles them into the page's CSS
// (scripts/build-reader.ts). TypeScript checks that such an import resolves, and a .css file has no types.
declare module '*.css';
