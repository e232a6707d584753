// Renders /openapi.json with the vendored Redoc bundle (server/web/vendor, see
// scripts/build-docs-ui.sh). Paths are relative so the page works behind a path prefix.
'use strict';
Redoc.init('openapi.json', {
  expandResponses: '200',
  jsonSampleExpandLevel: 3,
  hideHostname: true,
  sortTagsAlphabetically: false,
  theme: {
    colors: { primary: { main: '#5b3cc4' } },
    typography: { fontFamily: 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif', headings: { fontFamily: 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif' } },
    sidebar: { backgroundColor: '#f4f5f8' },
    rightPanel: { backgroundColor: '#14121f' },
  },
}, document.getElementById('redoc'));
