// The dependency DAG on Boost.Graph: a topological order once, then linear passes per query.
#include "clampai/agent/causal_graph.hpp"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/topological_sort.hpp>
#include <iterator>

#include "valuation_internal.hpp"

namespace clampai::agent {

namespace {
using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS>;
}

struct CausalGraph::Impl {
  Graph graph;
  std::vector<std::size_t> order;  // topological: dependencies first
  std::vector<double> cost;        // nominal cost of each action
};

CausalGraph::CausalGraph(const kernel::TaskModel& model) : impl_(std::make_unique<Impl>()) {
  const std::size_t n = model.actions.size();
  impl_->graph = Graph(n);
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t d : model.actions[a].dependencies) boost::add_edge(d, a, impl_->graph);
    impl_->cost.push_back(detail::amount_to_double(model, detail::nominal_cost(model, a)));
  }
  std::vector<std::size_t> reversed;
  boost::topological_sort(impl_->graph, std::back_inserter(reversed));  // sinks first
  impl_->order.assign(reversed.rbegin(), reversed.rend());
}

CausalGraph::~CausalGraph() = default;
CausalGraph::CausalGraph(CausalGraph&&) noexcept = default;
CausalGraph& CausalGraph::operator=(CausalGraph&&) noexcept = default;

std::size_t CausalGraph::size() const noexcept { return boost::num_vertices(impl_->graph); }

bool CausalGraph::ready(std::size_t action, std::span<const std::uint64_t> completions) const {
  for (const auto e : boost::make_iterator_range(boost::in_edges(action, impl_->graph))) {
    if (completions[boost::source(e, impl_->graph)] == 0) return false;
  }
  return true;
}

std::vector<std::size_t> CausalGraph::blockers(std::size_t action,
                                               std::span<const std::uint64_t> completions) const {
  std::vector<std::size_t> out;
  for (const auto e : boost::make_iterator_range(boost::in_edges(action, impl_->graph))) {
    const std::size_t d = boost::source(e, impl_->graph);
    if (completions[d] == 0) out.push_back(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::size_t> CausalGraph::dependents(std::size_t action) const {
  std::vector<char> seen(size(), 0);
  std::vector<std::size_t> stack{action};
  while (!stack.empty()) {
    const std::size_t v = stack.back();
    stack.pop_back();
    for (const auto e : boost::make_iterator_range(boost::out_edges(v, impl_->graph))) {
      const std::size_t t = boost::target(e, impl_->graph);
      if (seen[t] == 0) {
        seen[t] = 1;
        stack.push_back(t);
      }
    }
  }
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < seen.size(); ++i)
    if (seen[i] != 0) out.push_back(i);
  return out;
}

std::vector<std::size_t> CausalGraph::critical_path(
    std::span<const std::uint64_t> completions) const {
  // Longest path in a DAG by dynamic programming over the topological order, restricted to the
  // actions still to complete. `best[v]` is the heaviest chain ending at v.
  const std::size_t n = size();
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  std::vector<double> best(n, 0.0);
  std::vector<std::size_t> length(n, 0), prev(n, none);
  std::size_t end = none;
  for (std::size_t v : impl_->order) {
    if (completions[v] != 0) continue;
    best[v] = impl_->cost[v];
    length[v] = 1;
    for (const auto e : boost::make_iterator_range(boost::in_edges(v, impl_->graph))) {
      const std::size_t u = boost::source(e, impl_->graph);
      if (completions[u] != 0) continue;
      const double w = best[u] + impl_->cost[v];
      if (w > best[v] || (w == best[v] && length[u] + 1 > length[v]) ||
          (w == best[v] && length[u] + 1 == length[v] && prev[v] != none && u < prev[v])) {
        best[v] = w;
        length[v] = length[u] + 1;
        prev[v] = u;
      }
    }
    // Only chains (two actions or more) are paths worth naming.
    if (length[v] < 2) continue;
    if (end == none || best[v] > best[end] ||
        (best[v] == best[end] &&
         (length[v] > length[end] || (length[v] == length[end] && v < end))))
      end = v;
  }
  std::vector<std::size_t> path;
  for (std::size_t v = end; v != none; v = prev[v]) path.push_back(v);
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace clampai::agent
