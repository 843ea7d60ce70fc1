# Writes OUT: kernel/src/decision/pools.cpp (IN) with the root level of every chain unchecked
# (`PoolTree::Chain::refusing` skips the last level), the broken variant of coq/theories/Pools.v
# (`broken_pools_overspend`) in C++, for the test that shows pools_differential can fail. Fails
# if the source is not the expected one (the mutation must really happen).
file(READ "${IN}" text)
set(good "    if (!a || !n.ledger.can_afford(*a) || __builtin_add_overflow(n.ledger.gross(), *a, &gross))\n      return k;")
set(bad "    if (k + 1 < levels_.size() &&\n        (!a || !n.ledger.can_afford(*a) || __builtin_add_overflow(n.ledger.gross(), *a, &gross)))\n      return k;")
string(FIND "${text}" "${good}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "mutate_pools_unchecked: the check of `refusing` is not in ${IN}: update the mutation")
endif()
string(REPLACE "${good}" "${bad}" mutated "${text}")
file(WRITE "${OUT}" "${mutated}")
