// SPDX-License-Identifier: (MIT OR GPL-2.0)
//
// A TC program that drops every packet, for tests/netns.rs only: attached beside the probe, it
// stands for another program on the UPF's interfaces (an eBPF UPF redirecting what it receives,
// a filter dropping what it sends) and shows the order the probe attaches in: first at ingress,
// last at egress.

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

SEC("classifier") int drop_all(struct __sk_buff *skb) { return TC_ACT_SHOT; }

char LICENSE[] SEC("license") = "Dual MIT/GPL";
