//! The core and the CU-UP as the stack wires them: a packet through the UPF stage of its slice,
//! N3, the CU-UP's GTP-U, SDAP and PDCP executors, and F1-U onto the midhaul (and back up).

use super::*;

impl Stack {
    pub(super) fn exec_mut(&mut self, id: ExecId) -> &mut Executor<Job> {
        match id {
            ExecId::Upf(s) => &mut self.upf[usize::from(s)],
            ExecId::Gtpu => &mut self.gtpu,
            ExecId::Cuup => &mut self.cuup,
            ExecId::F1u => &mut self.f1u,
        }
    }

    pub(super) fn exec_meta(id: ExecId) -> (Node, Layer, Queue) {
        match id {
            ExecId::Upf(_) => (Node::Upf, Layer::Upf, Queue::UpfExec),
            ExecId::Gtpu => (Node::GnbCu, Layer::Gtpu, Queue::GtpuRxExec),
            ExecId::Cuup => (Node::GnbCu, Layer::CuupExec, Queue::CuupExec),
            ExecId::F1u => (Node::GnbCu, Layer::F1u, Queue::F1uExec),
        }
    }

    pub(super) fn submit<S: Sink>(&mut self, now: Instant, id: ExecId, job: Job, sink: &mut S) {
        let (node, layer, queue) = Self::exec_meta(id);
        let bytes = job.len;
        let (job, service) = match self.exec_mut(id).submit(now, job, bytes, job.p.ue) {
            Submit::Started { job, service_ns } => (job, Some(service_ns)),
            Submit::Queued => (job, None),
            Submit::Rejected(job) => return self.drop_packet(sink, now, node, layer, &job.p, Reason::ExecQueueFull),
        };
        let ex = self.exec_mut(id);
        let (qb, qp) = (ex.queue_bytes(), ex.queue_pkts());
        let mut e = self.ev(now, node, layer, Point::Enqueue, &job.p);
        e.queue = Some(queue);
        e.queue_bytes = Some(qb);
        e.queue_pkts = Some(qp);
        e.bytes = job.len;
        sink.packet(e);
        if let Some(service_ns) = service {
            self.schedule(now + service_ns, Action::ExecDone { exec: id, job, started: now });
        }
    }

    pub(super) fn exec_done<S: Sink>(&mut self, now: Instant, id: ExecId, job: Job, started: Instant, sink: &mut S) {
        // The worker takes the next job.
        if let Some((next, service)) = self.exec_mut(id).finish(job.p.ue) {
            self.schedule(now + service, Action::ExecDone { exec: id, job: next, started: now });
        }
        let p = job.p;
        match (id, p.dir) {
            (ExecId::Upf(_), dir) => {
                self.emit(sink, started, Node::Upf, Layer::Upf, Point::ProcBegin, &p);
                self.emit(sink, now, Node::Upf, Layer::Upf, Point::ProcEnd, &p);
                if dir == Dir::Dl {
                    let len = p.bytes + GTPU_OVERHEAD;
                    let at = self.n3_dl.send(now, len);
                    self.schedule_arrival(LinkId::N3Dl, at, Action::N3Arrive(Job { p, count: 0, len }));
                } else {
                    let at = self.n6_ul.send(now, p.bytes);
                    self.schedule_arrival(LinkId::N6Ul, at, Action::N6Deliver(p));
                }
            }
            (ExecId::Gtpu, Dir::Dl) => {
                self.emit(sink, started, Node::GnbCu, Layer::Gtpu, Point::ProcBegin, &p);
                self.emit(sink, now, Node::GnbCu, Layer::Gtpu, Point::ProcEnd, &p);
                self.submit(now, ExecId::Cuup, Job { p, count: 0, len: p.bytes }, sink);
            }
            (ExecId::Gtpu, Dir::Ul) => {
                self.emit(sink, started, Node::GnbCu, Layer::Gtpu, Point::ProcBegin, &p);
                self.emit(sink, now, Node::GnbCu, Layer::Gtpu, Point::ProcEnd, &p);
                let len = p.bytes + GTPU_OVERHEAD;
                if self.upf_process.get(usize::from(p.slice)).copied().unwrap_or(false) {
                    // A real UPF's slice: the packet leaves the model on N3, in its tunnel.
                    let mut e = self.ev(now, Node::GnbCu, Layer::N3, Point::Tx, &p);
                    e.bytes = len;
                    sink.packet(e);
                    if self.live.remove(&p.pkt).is_some() {
                        self.stats.to_core_pkts += 1;
                        self.handoffs.push(Delivery { packet: p, t: now });
                    }
                    return;
                }
                let at = self.n3_ul.send(now, len);
                self.schedule_arrival(LinkId::N3Ul, at, Action::N3Arrive(Job { p, count: 0, len }));
            }
            (ExecId::Cuup, Dir::Dl) => {
                // SDAP then PDCP on the same worker.
                let sdap_end = (started + self.cfg.cu_up.sdap_proc_ns).min(now);
                self.emit(sink, started, Node::GnbCu, Layer::Sdap, Point::ProcBegin, &p);
                self.emit(sink, sdap_end, Node::GnbCu, Layer::Sdap, Point::ProcEnd, &p);
                self.emit(sink, sdap_end, Node::GnbCu, Layer::Pdcp, Point::ProcBegin, &p);
                let (ui, di) = (p.ue as usize, self.drb_idx_of(&p));
                if let Some((count, len)) = self.pdcp_send(sink, now, Node::GnbCu, ui, di, &p) {
                    let p = self.pdcp_ce_mark(now, ui, di, p, sink);
                    self.arm(now, ui, di, TimerOwner::CuPdcpTx);
                    self.f1u_send(now, ui, di, Job { p, count, len }, sink);
                }
            }
            (ExecId::Cuup, Dir::Ul) => {
                self.emit(sink, started, Node::GnbCu, Layer::Pdcp, Point::ProcBegin, &p);
                let mut e = self.ev(now, Node::GnbCu, Layer::Pdcp, Point::ProcEnd, &p);
                e.sn = Some(job.count);
                sink.packet(e);
                let (ui, di) = (p.ue as usize, self.drb_idx_of(&p));
                self.ues[ui].drbs[di].cu_pdcp_rx.handle_pdu(now, job.count, p);
                self.drain_pdcp_rx(now, ui, di, false, sink);
                self.arm(now, ui, di, TimerOwner::CuPdcpRx);
            }
            (ExecId::F1u, _) => {
                self.emit(sink, started, Node::GnbCu, Layer::F1u, Point::ProcBegin, &p);
                self.emit(sink, now, Node::GnbCu, Layer::F1u, Point::ProcEnd, &p);
                let at = self.mh_dl.send(now, job.len);
                self.schedule_arrival(LinkId::MidhaulDl, at, Action::MidhaulArrive(job));
            }
        }
    }

    /// PDCP hands a DL PDU to the bearer's F1-U: onto the F1-U executor, or into the transmit
    /// queue while the DU's desired buffer size has no room for it (flow control, `crate::f1u`).
    fn f1u_send<S: Sink>(&mut self, now: Instant, ui: usize, di: usize, job: Job, sink: &mut S) {
        let f1u = &mut self.ues[ui].drbs[di].cu_f1u;
        if let Some(job) = f1u.handle_pdu(job.count, job.len, job) {
            return self.submit(now, ExecId::F1u, job, sink);
        }
        let (qb, qp) = (f1u.queue_bytes(), f1u.queue_pkts());
        self.f1u_tx_event(now, Point::Enqueue, &job, Some((qb, qp)), sink);
    }

    /// Sends what the bearer's F1-U transmit queue now has room for (after a DDDS).
    pub(super) fn f1u_release<S: Sink>(&mut self, now: Instant, ui: usize, di: usize, sink: &mut S) {
        while let Some(job) = self.ues[ui].drbs[di].cu_f1u.poll_transmit() {
            self.f1u_tx_event(now, Point::Dequeue, &job, None, sink);
            self.submit(now, ExecId::F1u, job, sink);
        }
    }

    fn f1u_tx_event<S: Sink>(
        &self,
        now: Instant,
        point: Point,
        job: &Job,
        occupancy: Option<(u64, u32)>,
        sink: &mut S,
    ) {
        let mut e = self.ev(now, Node::GnbCu, Layer::F1u, point, &job.p);
        e.queue = Some(Queue::F1uTx);
        e.queue_bytes = occupancy.map(|o| o.0);
        e.queue_pkts = occupancy.map(|o| o.1);
        e.sn = Some(job.count);
        e.bytes = job.len;
        sink.packet(e);
    }

    pub(super) fn drb_idx_of(&self, p: &Packet) -> usize {
        usize::from(p.drb) - 1
    }
}
