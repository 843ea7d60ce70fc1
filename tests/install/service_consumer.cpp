// Links clampai::server and clampai::agent from the installed package: the mock LLM drives a
// task spec through the agent loop, then the same spec is served by a Service (no sockets) and
// one evaluate request answered.
#include <fstream>
#include <iostream>
#include <sstream>

#include "clampai/agent/mock.hpp"
#include "clampai/agent/orchestrator.hpp"
#include "clampai/kernel.hpp"
#include "clampai/server.hpp"

int main(int argc, char** argv) {
  namespace ca = clampai::agent;
  namespace ck = clampai::kernel;
  namespace cs = clampai::server;
  if (argc != 3) return 2;  // SPEC ACTION
  std::ifstream in(argv[1]);
  std::stringstream text;
  text << in.rdbuf();

  ck::SafetyKernel kernel(ck::load_spec(text.str()));
  ca::MockLlm llm;
  const ca::OrchestratorResult r = ca::Orchestrator(kernel, llm).run();
  std::cout << "agent: " << ca::to_string(r.termination) << " after " << r.executed << " steps\n";

  cs::Service service(cs::ServiceOptions{});
  const std::string task = service.add_task(text.str(), argv[1]);
  const cs::Response res = service.handle({"POST",
                                           "/v1/tasks/" + task + "/evaluate",
                                           "",
                                           std::string(R"({"action": ")") + argv[2] + "\"}"});
  std::cout << "server: " << res.status << " " << res.body;
  return r.goal_reached && res.status == 200 ? 0 : 1;
}
