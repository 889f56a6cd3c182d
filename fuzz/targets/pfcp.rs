#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| scout_fuzz::pfcp::run(data));
