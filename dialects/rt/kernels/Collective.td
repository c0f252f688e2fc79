//===- Collective.td - the Collective kernels --------------*- tablegen -*-===//
//
// One record per kernel of the Collective family (RtKernelBase.td says what a
// record holds). The number after the mnemonic is the kernel's index in the
// executable: append-only across all families.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_DIALECTS_RT_KERNELS_COLLECTIVE_TD
#define FERRY_DIALECTS_RT_KERNELS_COLLECTIVE_TD

include "dialects/rt/kernels/RtKernelBase.td"

def Rt_AllReduceOp : RtKernel<"all_reduce", 46, "Collective"> {
  let kernelEnum = "AllReduce";
  let doc = "out = the sum (or maximum) over a group of each rank's x (x may be out, or disjoint from it; not partly overlapping): data-parallel gradients and metrics, tensor-parallel partial sums";
  let ints = [
    RtInt<"count", "elements">,
    RtInt<"replicas", "the group's size (the runtime refuses another)">,
    RtInt<"group", "the mesh group: 0 the data-parallel replicas (absent), 1 the tensor-parallel group", RtOptional>,
    RtInt<"reduction", "0 the sum (absent), 1 the maximum", RtOptional>];
  let buffers = [
    RtBuffer<"x", RtIn, RtF32, "count", "this replica's values">,
    RtBuffer<"out", RtOut, RtF32, "count", "their sum">];
  let checks = [
    RtCheck<"replicas >= 1", "no replicas">,
    RtCheck<"group >= 0 && group <= 1", "a group that is neither 0 (data) nor 1 (tensor)">,
    RtCheck<"reduction >= 0 && reduction <= 1", "a reduction that is neither 0 (sum) nor 1 (maximum)">];
}

def Rt_ReduceScatterOp : RtKernel<"reduce_scatter", 47, "Collective"> {
  let kernelEnum = "ReduceScatter";
  let doc = "out = this replica's shard of the sum over the replica group of x, x read padded with zeros to replicas * shard elements; shard r is elements [r * shard, (r + 1) * shard)";
  let ints = [
    RtInt<"count", "elements of x">,
    RtInt<"shard", "elements of a shard: ceil(count / replicas)">,
    RtInt<"replicas", "the group's size (the runtime refuses another)">,
    RtInt<"group", "the mesh group: 0 the data-parallel replicas (absent), 1 the tensor-parallel group", RtOptional>];
  let buffers = [
    RtBuffer<"x", RtIn, RtF32, "count", "this replica's whole tensor">,
    RtBuffer<"out", RtOut, RtF32, "shard", "this replica's shard of the sum">,
    RtBuffer<"workspace", RtOut, RtF32, "replicas * shard", "x padded, when count < replicas * shard", RtOptional>];
  let checks = [
    RtCheck<"replicas >= 1 && shard * replicas >= count && (shard - 1) * replicas < count", "a shard that is not ceil(count / replicas)">,
    RtCheck<"group >= 0 && group <= 1", "a group that is neither 0 (data) nor 1 (tensor)">];
  let disjoint = [
    RtDisjoint<"out", "x">,
    RtDisjoint<"workspace", "x">,
    RtDisjoint<"out", "workspace">];
}

def Rt_AllGatherOp : RtKernel<"all_gather", 48, "Collective"> {
  let kernelEnum = "AllGather";
  let doc = "out = the replicas' shards in replica order, the padding past count dropped: the inverse layout of reduce_scatter";
  let ints = [
    RtInt<"count", "elements of out">,
    RtInt<"shard", "elements of a shard: ceil(count / replicas)">,
    RtInt<"replicas", "the group's size (the runtime refuses another)">,
    RtInt<"group", "the mesh group: 0 the data-parallel replicas (absent), 1 the tensor-parallel group", RtOptional>];
  let buffers = [
    RtBuffer<"x", RtIn, RtF32, "shard", "this replica's shard">,
    RtBuffer<"out", RtOut, RtF32, "count", "the whole tensor">,
    RtBuffer<"workspace", RtOut, RtF32, "replicas * shard", "the gathered shards, when count < replicas * shard", RtOptional>];
  let checks = [
    RtCheck<"replicas >= 1 && shard * replicas >= count && (shard - 1) * replicas < count", "a shard that is not ceil(count / replicas)">,
    RtCheck<"group >= 0 && group <= 1", "a group that is neither 0 (data) nor 1 (tensor)">];
  let disjoint = [
    RtDisjoint<"out", "x">,
    RtDisjoint<"workspace", "x">,
    RtDisjoint<"out", "workspace">];
}

def Rt_PartOfGroupOp : RtKernel<"part_of_group", 60, "Collective"> {
  let kernelEnum = "PartOfGroup";
  let doc = "out = this rank's part of x, which is the same on every rank of the group: elements [rank * count, (rank + 1) * count); no rank communicates (sequence parallelism's split of a replicated activation)";
  let ints = [
    RtInt<"count", "elements of out">,
    RtInt<"replicas", "the group's size (the runtime refuses another)">,
    RtInt<"group", "the mesh group: 0 the data-parallel replicas (absent), 1 the tensor-parallel group", RtOptional>];
  let buffers = [
    RtBuffer<"x", RtIn, RtF32, "count * replicas", "the whole tensor">,
    RtBuffer<"out", RtOut, RtF32, "count", "this rank's part">];
  let checks = [
    RtCheck<"replicas >= 1", "no replicas">,
    RtCheck<"group >= 0 && group <= 1", "a group that is neither 0 (data) nor 1 (tensor)">];
  let disjoint = [
    RtDisjoint<"out", "x">];
}
#endif // FERRY_DIALECTS_RT_KERNELS_COLLECTIVE_TD
