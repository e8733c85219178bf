// libFuzzer supplies main(); libsystemc, linked in with the models, still needs an sc_main.
extern "C" int sc_main(int, char**) { return 0; }
