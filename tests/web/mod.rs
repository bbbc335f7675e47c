//! The web panel: every page and action through the real router and core (handler
//! tests without a socket), `/healthz`, `/metrics`, and a browser test in headless
//! Chromium against the real `pincer run`.

mod access;
mod browser;
mod cron;
mod harness;
mod memory;
mod metrics;
mod pages;
