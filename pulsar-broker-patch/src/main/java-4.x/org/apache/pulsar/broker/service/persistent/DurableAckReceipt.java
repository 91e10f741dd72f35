/*
 * Licensed to the Apache Software Foundation (ASF) under one
 * or more contributor license agreements.  See the NOTICE file
 * distributed with this work for additional information
 * regarding copyright ownership.  The ASF licenses this file
 * to you under the Apache License, Version 2.0 (the
 * "License"); you may not use this file except in compliance
 * with the License.  You may obtain a copy of the License at
 *
 *   http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing,
 * software distributed under the License is distributed on an
 * "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
 * KIND, either express or implied.  See the License for the
 * specific language governing permissions and limitations
 * under the License.
 */
package org.apache.pulsar.broker.service.persistent;

import java.util.concurrent.CompletableFuture;
import org.apache.bookkeeper.mledger.AsyncCallbacks.DeleteCallback;
import org.apache.bookkeeper.mledger.AsyncCallbacks.MarkDeleteCallback;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.pulsar.broker.service.BrokerServiceException;

/**
 * The receipt of one ack when the broker answers receipts once the ack is durable
 * ({@code ackReceiptWaitsForPersistence}, the semantics 5.0 has since apache/pulsar#25528): the subscription's
 * shared callback does its work first, then the receipt completes when the cursor reports the ack durable and
 * fails when its write fails. An ack the rate limiter accepted is applied, not durable: the receipt waits.
 *
 * <p>A write that fails because the cursor is closed or fenced (the topic was unloaded, or another broker took
 * it over) answers ServiceNotReady, as an ack the broker discards: the broker that has the topic now delivers the
 * message again. Any other failure answers PersistenceError: the ack is not known to be durable, and it may still
 * become so, since it stays applied and the cursor writes its state again.
 */
final class DurableAckReceipt implements MarkDeleteCallback, DeleteCallback {
    private final MarkDeleteCallback markDelete;
    private final DeleteCallback delete;
    private final CompletableFuture<Void> receipt;

    DurableAckReceipt(MarkDeleteCallback markDelete, DeleteCallback delete, CompletableFuture<Void> receipt) {
        this.markDelete = markDelete;
        this.delete = delete;
        this.receipt = receipt;
    }

    @Override
    public void markDeleteAccepted(Object ctx) {
        markDelete.markDeleteAccepted(ctx);
    }

    @Override
    public void markDeleteComplete(Object ctx) {
        try {
            markDelete.markDeleteComplete(ctx);
        } finally {
            receipt.complete(null);
        }
    }

    @Override
    public void markDeleteFailed(ManagedLedgerException exception, Object ctx) {
        try {
            markDelete.markDeleteFailed(exception, ctx);
        } finally {
            receipt.completeExceptionally(notPersisted(exception));
        }
    }

    @Override
    public void deleteAccepted(Object ctx) {
        delete.deleteAccepted(ctx);
    }

    @Override
    public void deleteComplete(Object ctx) {
        try {
            delete.deleteComplete(ctx);
        } finally {
            receipt.complete(null);
        }
    }

    @Override
    public void deleteFailed(ManagedLedgerException exception, Object ctx) {
        try {
            delete.deleteFailed(exception, ctx);
        } finally {
            receipt.completeExceptionally(notPersisted(exception));
        }
    }

    static BrokerServiceException notPersisted(ManagedLedgerException exception) {
        String message = "Ack not persisted: " + exception.getMessage();
        if (exception instanceof ManagedLedgerException.CursorAlreadyClosedException
                || exception instanceof ManagedLedgerException.ManagedLedgerAlreadyClosedException
                || exception instanceof ManagedLedgerException.ManagedLedgerFencedException
                || exception instanceof ManagedLedgerException.BadVersionException) {
            return new BrokerServiceException.ServiceUnitNotReadyException(message, exception);
        }
        // Its constructors take a message or a cause, not both: the client sees the message, the log the cause.
        BrokerServiceException persistence = new BrokerServiceException.PersistenceException(message);
        persistence.initCause(exception);
        return persistence;
    }
}
