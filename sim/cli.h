#pragma once
namespace mbpsim {
// The `mbpsim` command line; returns the exit status.
int cli_main(int argc, char** argv);
}
