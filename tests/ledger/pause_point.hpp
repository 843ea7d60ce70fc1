// The pause point of the test agents (fault_agent, escrow_agent): `POINT:K DIR` on their command
// line names a point of their work and the K-th time they reach it; there they create DIR/paused
// and wait for DIR/go, so that a test can kill them, restart the server or drop their connection
// at the same place every run.
#pragma once

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

struct PausePoint {
  std::string point;  // empty: never pause
  long at = 0;
  std::string dir;
  long seen = 0;

  /// From argv[first] (`POINT:K`) and argv[first + 1] (DIR), when there are that many.
  PausePoint(int argc, char** argv, int first) {
    if (argc <= first + 1) return;
    const std::string p = argv[first];
    point = p.substr(0, p.find(':'));
    at = std::stol(p.substr(p.find(':') + 1));
    dir = argv[first + 1];
  }

  /// Called at `name`: pauses there the K-th time.
  void reached(const std::string& name) {
    if (name != point || ++seen != at) return;
    std::ofstream(dir + "/paused") << "paused\n";
    while (!std::filesystem::exists(dir + "/go"))
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
};
